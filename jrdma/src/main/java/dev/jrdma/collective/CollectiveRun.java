package dev.jrdma.collective;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * One collective on this member: its name and number, the members it still waits for, and its
 * outcome. Every step (a control message, an expected arrival, a write) is tracked against the
 * member it is about, so that a failure or the time-out names that member.
 */
final class CollectiveRun {
    final String name;
    final long number;
    final int seq;
    final CompletableFuture<Void> result = new CompletableFuture<>();
    private final Map<Integer, Integer> waitingFor = new ConcurrentHashMap<>();

    CollectiveRun(String name, long number, Duration timeout) {
        this.name = name;
        this.number = number;
        this.seq = (int) (number & GroupWireDescriptor.SEQ_MASK);
        // orTimeout's task is cancelled (and dropped) as soon as the collective ends: a group that
        // runs many short collectives does not pile up timers.
        CompletableFuture<Void> timer = new CompletableFuture<>();
        result.whenComplete((v, e) -> timer.complete(null));
        timer.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((v, e) -> {
            if (e != null && !result.isDone()) {
                int rank = waitingFor.keySet().stream().mapToInt(Integer::intValue).min().orElse(-1);
                String whom = rank < 0 ? "" : " waiting for rank " + rank
                        + (waitingFor.size() > 1 ? " (and " + (waitingFor.size() - 1) + " more: " + waitingFor.keySet() + ")" : "");
                fail(rank, new RdmaTimeoutException(what() + " timed out after " + timeout.toMillis() + " ms" + whom));
            }
        });
    }

    String what() {
        return name + " #" + number;
    }

    /** The members a step of this collective still waits for, lowest first; empty once it ended. */
    java.util.SortedSet<Integer> waitingFor() {
        java.util.SortedSet<Integer> ranks = new java.util.TreeSet<>(waitingFor.keySet());
        return result.isDone() ? java.util.Collections.emptySortedSet() : ranks;
    }

    /** Tracks {@code step} as waiting for member {@code rank}; its failure fails the collective, naming the member. */
    <T> CompletableFuture<T> track(int rank, CompletableFuture<T> step) {
        waitingFor.merge(rank, 1, Integer::sum);   // atomic per key, as is the decrement below
        step.whenComplete((v, e) -> {
            if (e != null) {
                fail(rank, e);
            } else {
                waitingFor.merge(rank, -1, (a, b) -> a + b == 0 ? null : a + b);
            }
        });
        return step;
    }

    /** Ends the collective with a failure about member {@code rank} (the first failure wins). */
    void fail(int rank, Throwable e) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof CollectiveException ce) {
            // Already about a member: say which collective it failed, unless it does.
            result.completeExceptionally(ce.getMessage() != null && ce.getMessage().startsWith(what()) ? ce
                    : new CollectiveException(ce.rank(), what() + " failed: " + ce.getMessage(), ce));
            return;
        }
        String why = cause.getMessage() != null ? cause.getMessage() : cause.toString();
        String at = rank < 0 ? "" : " at rank " + rank;
        result.completeExceptionally(new CollectiveException(rank, what() + " failed" + at + ": " + why,
                cause instanceof RdmaException || cause instanceof RuntimeException ? cause : new RdmaException(why, cause)));
    }

    /** Completes the collective when {@code all} does (or fails it as {@link #track} saw). */
    CompletableFuture<Void> finishWith(CompletableFuture<Void> all) {
        all.whenComplete((v, e) -> {
            if (e == null) {
                result.complete(null);
            } else {
                fail(-1, e);
            }
        });
        return result;
    }
}
