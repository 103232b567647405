package dev.jrdma.runtime;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * Who runs an IO loop's passes, as Agrona splits {@code AgentRunner} (a thread of its own) from
 * {@code AgentInvoker} (the caller's thread): {@link ThreadRunner} or {@link CallerInvoker}. The
 * loop's state is the {@link DutyCycle}'s; the driver says which thread is its owner now, and how
 * a waiting caller gets the work done.
 */
abstract sealed class LoopDriver permits ThreadRunner, CallerInvoker {
    final DutyCycle cycle;
    final WakeUp wakeUp;
    volatile boolean running = true;

    LoopDriver(DutyCycle cycle, WakeUp wakeUp) {
        this.cycle = cycle;
        this.wakeUp = wakeUp;
    }

    /** Whether the calling thread is the loop's owner now (a task handed over from it runs at once). */
    abstract boolean inThisThread();

    /** Whether the loop sleeps by itself, so that handing it work must wake it. */
    abstract boolean sleepsByItself();

    /** Waits for {@code f}, doing the loop's work meanwhile where the caller must. */
    abstract <T> T await(CompletableFuture<T> f, long timeoutNanos)
            throws InterruptedException, ExecutionException, TimeoutException;

    /** Stops the loop after the tasks already handed to it; once. */
    abstract void close();
}
