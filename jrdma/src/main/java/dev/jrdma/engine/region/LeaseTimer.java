package dev.jrdma.engine.region;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Ends leases: a daemon thread ({@code jrdma-leases-<device>}) made by the first lease, ended by
 * {@link #close()}. A lease's end that throws is logged, and the timer goes on.
 *
 * <p>Threads: any; the executor is made and taken under this object's lock.
 */
public final class LeaseTimer {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final String deviceName;
    /** Throws when the owner is closed; run under the lock, so that no lease is scheduled past {@link #close()}. */
    private final Runnable checkOpen;
    /** Made by the first lease, guarded by this. */
    private ScheduledExecutorService timer;

    /**
     * @param deviceName names the thread
     * @param checkOpen  throws when the owner ({@code Rdma}) is closed
     */
    public LeaseTimer(String deviceName, Runnable checkOpen) {
        this.deviceName = deviceName;
        this.checkOpen = checkOpen;
    }

    /** Runs {@code end} after {@code after} on the timer's thread (started now if this is the first lease). */
    public void schedule(Duration after, Runnable end) {
        ScheduledExecutorService t;
        synchronized (this) {
            checkOpen.run();
            if (timer == null) {
                ScheduledThreadPoolExecutor made = new ScheduledThreadPoolExecutor(1, r -> {
                    Thread th = new Thread(r, "jrdma-leases-" + deviceName);
                    th.setDaemon(true);
                    return th;
                });
                made.setRemoveOnCancelPolicy(true);
                timer = made;
            }
            t = timer;
        }
        t.schedule(() -> {
            try {
                end.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "ending a lease failed", e);
            }
        }, Math.max(1, after.toNanos()), TimeUnit.NANOSECONDS);
    }

    /** Stops the thread, if a lease started it, waiting up to 10 s for a lease's end that runs. */
    public void close() {
        ScheduledExecutorService t;
        synchronized (this) {
            t = timer;
            timer = null;
        }
        if (t == null) {
            return;
        }
        t.shutdownNow();
        try {
            if (!t.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "the lease timer did not stop within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
