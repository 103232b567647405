package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.runtime.IoThread;

import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How the {@code *Sync} operations wait, without allocating: one waiter per application thread,
 * reused. With an IO thread, the caller spins briefly for the completion (most complete within
 * microseconds), then parks until the IO thread unparks it. In the INLINE mode the caller itself
 * polls the completion queue. Never on the IO thread: that would stop the progress it waits for.
 */
final class SyncWaiter implements CompletionHandler<Object, Object> {
    /** Spins before parking: a few tens of µs, the latency of a small RDMA operation. */
    private static final int SPINS = 20_000;
    private static final ThreadLocal<SyncWaiter> WAITERS = ThreadLocal.withInitial(SyncWaiter::new);

    private final Thread owner = Thread.currentThread();
    private volatile boolean done;
    private boolean inUse;
    private long value;
    private RdmaException failure;

    /** This thread's waiter, ready for one operation. */
    static SyncWaiter forThisThread(IoThread io) {
        if (io.inThisThread()) {
            throw new IllegalStateException("a *Sync operation on the IO thread (" + io.name()
                    + ") would block the progress it waits for: use the future or handler form in callbacks");
        }
        SyncWaiter w = WAITERS.get();
        if (w.inUse) {
            throw new IllegalStateException("a *Sync operation is already waiting on this thread");
        }
        w.inUse = true;
        w.done = false;
        w.failure = null;
        return w;
    }

    /** The operation was not posted: free for the next. */
    void reset() {
        inUse = false;
    }

    void done(long v, RdmaException e) {
        value = v;
        failure = e;
        done = true;
        LockSupport.unpark(owner);
    }

    @Override
    public void completed(Object result, Object attachment) {
        done(result instanceof Long l ? l : 0, null);
    }

    @Override
    public void failed(Throwable e, Object attachment) {
        done(0, e instanceof RdmaException r ? r : new RdmaException(e.toString(), e));
    }

    /**
     * Waits for the completion, at most the connection's timeout plus 5 s (operations end sooner:
     * they complete, fail, or are flushed when the connection goes down); returns the value.
     */
    long await(Connection c) {
        IoThread io = c.io;
        long deadline = System.nanoTime() + c.config().timeout().toNanos() + TimeUnit.SECONDS.toNanos(5);
        int spins = 0;
        int loops = 0;
        while (!done) {
            if (io.drivenByCaller()) {
                if (io.poll() == 0) {
                    Thread.onSpinWait();
                }
            } else if (spins < SPINS) {
                // Yield now and then: the IO thread that completes this may be waiting for a CPU.
                if ((++spins & 255) == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
            } else {
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(10));
            }
            if (Thread.interrupted()) {
                abandon();
                Thread.currentThread().interrupt();
                throw new RdmaException("interrupted while waiting for an operation on " + c
                        + " (it still completes, unseen)");
            }
            boolean check = spins == SPINS || (++loops & 1023) == 0;   // parking, or every 1024 spins
            if (check && System.nanoTime() > deadline) {
                abandon();
                throw new RdmaTimeoutException("an operation on " + c + " did not complete within "
                        + c.config().timeout() + " + 5 s");
            }
        }
        inUse = false;
        if (failure != null) {
            RdmaException e = failure;
            failure = null;
            throw e;
        }
        return value;
    }

    /** The operation is still out and will complete into this waiter: give the thread a new one. */
    private void abandon() {
        WAITERS.set(new SyncWaiter());
    }
}
