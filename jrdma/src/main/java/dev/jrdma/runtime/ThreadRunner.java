package dev.jrdma.runtime;

import dev.jrdma.os.LibC;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An IO loop on a thread of its own (Agrona's {@code AgentRunner}): passes until closed, and after
 * a pass with no work whatever its {@link IdleStrategy} says. The thread is the loop's only owner.
 */
final class ThreadRunner extends LoopDriver implements IdleStrategy.Sleep {
    private final IdleStrategy idle;
    private final int cpu;
    private final Thread thread;
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private volatile int tid;

    /**
     * Starts the thread and waits until it runs (pinned, when {@code cpu} is 0 or more).
     *
     * @throws dev.jrdma.exceptions.NativeRdmaException when pinning fails: the thread is gone then
     */
    ThreadRunner(DutyCycle cycle, WakeUp wakeUp, IdleStrategy idle, int cpu) {
        super(cycle, wakeUp);
        this.idle = idle;
        this.cpu = cpu;
        this.thread = Thread.ofPlatform().name(cycle.name()).daemon(true).unstarted(this::run);
        thread.start();
        try {
            started.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            joinQuietly();   // it failed to start and is ending: gone when the caller sees the failure
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            throw new IllegalStateException(cycle.name() + " did not start", e);
        }
    }

    int tid() {
        return tid;
    }

    int cpu() {
        return cpu;
    }

    @Override
    boolean inThisThread() {
        return Thread.currentThread() == thread;
    }

    @Override
    boolean sleepsByItself() {
        return true;
    }

    @Override
    <T> T await(CompletableFuture<T> f, long timeoutNanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        return f.get(timeoutNanos, TimeUnit.NANOSECONDS);   // its own thread does the work
    }

    private void run() {
        try {
            tid = LibC.gettid();
            if (cpu >= 0) {
                LibC.pinCurrentThread(cpu);
            }
        } catch (RuntimeException e) {
            wakeUp.close();
            started.completeExceptionally(e);
            stopped.complete(null);
            return;
        }
        started.complete(null);
        try {
            while (running) {
                int work = cycle.pass(true);
                cycle.afterPass(work, true);
                if (work > 0) {
                    idle.reset();
                } else {
                    idle.idle(this);
                }
            }
        } finally {
            cycle.runTasks();
            wakeUp.close();
            stopped.complete(null);
        }
    }

    /** The idle strategy's sleep: arms every source, looks once more, then sleeps in poll(2). */
    @Override
    public void sleep(int maxMillis) {
        cycle.armSources();
        wakeUp.asleep(true);
        boolean slept = false;
        try {
            if (cycle.lookBeforeSleep() == 0 && running) {
                wakeUp.sleep(maxMillis);
                slept = true;
            }
        } finally {
            wakeUp.asleep(false);
        }
        if (slept) {
            wakeUp.woke();
        }
        cycle.afterSleep();
    }

    /** Stops the thread after the tasks already handed to it, and waits up to 10 s for it to end. */
    @Override
    void close() {
        running = false;
        wakeUp.signal();
        if (inThisThread()) {
            return;
        }
        try {
            stopped.get(10, TimeUnit.SECONDS);
            // stopped completes just before the thread ends: wait for the end, so that once
            // close returns the thread is gone (not merely finishing).
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new IllegalStateException(cycle.name() + " did not stop within 10 s", e);
        }
    }

    private void joinQuietly() {
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }
}
