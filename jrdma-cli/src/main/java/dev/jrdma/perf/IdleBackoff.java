package dev.jrdma.perf;

import java.util.concurrent.locks.LockSupport;

/**
 * Sleeps between empty looks of a side that has nothing to do but wait (a server while the
 * client's one-sided operations run, or while no client has connected): the first sleep is
 * {@value #FIRST_NANOS} ns and each further one twice the last, up to a bound, until {@link
 * #reset()}. Where the device is software on the same CPUs (rxe in the kernel, or all of a
 * Soft-RoCE VM on one emulated host thread), every wake-up is CPU taken from the work being
 * measured: in the VM, write_bw 4 KiB measured 22.3 MB/s with a look every 200 us and 33.9 MB/s
 * with this backoff to 20 ms (perftest: 33 to 36). perftest's server waits in a blocking read.
 */
final class IdleBackoff {
    static final long FIRST_NANOS = 200_000;
    private final long maxNanos;
    private long next = FIRST_NANOS;

    IdleBackoff(long maxNanos) {
        this.maxNanos = Math.max(FIRST_NANOS, maxNanos);
    }

    /** Sleeps once, the next sleep twice as long (at most the bound). */
    void idle() {
        LockSupport.parkNanos(next);
        next = Math.min(next * 2, maxNanos);
    }

    /** Something came: the next sleep is the first one again. */
    void reset() {
        next = FIRST_NANOS;
    }

    /** The sleep {@link #idle()} takes next (for tests). */
    long nextNanos() {
        return next;
    }
}
