package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.channels.CompletionHandler;
import java.util.NavigableMap;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * How operations numbered by their attachment (0..n-1) ended, for the fault tests: each must end
 * exactly once. A first ending gives a permit back to {@link #window} (for posting with a bounded
 * number in flight) and counts {@link #ended} down; a second is only counted, and
 * {@link #expectEachEndedOnce} reports it.
 */
final class Outcomes {
    final AtomicIntegerArray calls;
    final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
    /** The failed operations by number (the first failure of each). */
    final NavigableMap<Integer, Throwable> failed = new ConcurrentSkipListMap<>();
    final AtomicInteger succeeded = new AtomicInteger();
    final Semaphore window;
    final CountDownLatch ended;
    /** System.nanoTime() of the latest first ending (0 before any). */
    volatile long lastEndNanos;
    /** System.nanoTime() of the first failure (0 before any). */
    final java.util.concurrent.atomic.AtomicLong firstFailureNanos = new java.util.concurrent.atomic.AtomicLong();

    Outcomes(int n, int window) {
        this.calls = new AtomicIntegerArray(n);
        this.ended = new CountDownLatch(n);
        this.window = new Semaphore(window);
    }

    /** A handler for any operation's result type; the attachment is the operation's number. */
    <V> CompletionHandler<V, Integer> handler() {
        return new CompletionHandler<>() {
            @Override
            public void completed(V v, Integer i) {
                succeeded.incrementAndGet();
                end(i);
            }

            @Override
            public void failed(Throwable e, Integer i) {
                firstFailureNanos.compareAndSet(0, System.nanoTime());
                failures.add(e);
                failed.putIfAbsent(i, e);
                end(i);
            }
        };
    }

    private void end(int i) {
        if (calls.incrementAndGet(i) == 1) {
            lastEndNanos = System.nanoTime();
            window.release();
            ended.countDown();
        }
    }

    /** Operations 0..posted-1 each ended exactly once. */
    void expectEachEndedOnce(int posted) {
        for (int i = 0; i < posted; i++) {
            assertEquals(1, calls.get(i), "operation " + i + " ended " + calls.get(i) + " times");
        }
    }
}
