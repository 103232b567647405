package dev.jrdma.perf;

/**
 * A time-out for a polling loop that reads the clock only on every {@value #CHECK_EVERY}th
 * empty poll, not on each. A clock read is about 20 ns on hardware, but in the Soft-RoCE VM
 * (QEMU TCG, HPET clocksource) it is a trapped device read costing more than the operation
 * being measured; perftest reads its cycle counter only where it takes a timestamp.
 */
final class IdleDeadline {
    static final int CHECK_EVERY = 256;
    private final long timeoutNanos;
    private long deadline;
    private int idle;
    private boolean progressed;

    /** Reads no clock: made once per operation in latency loops, it starts at its first look. */
    IdleDeadline(long timeoutNanos) {
        this.timeoutNanos = Math.min(timeoutNanos, Long.MAX_VALUE / 4);
        this.progressed = true;
    }

    /** Something happened: the time-out restarts (at the next look at the clock). */
    void progressed() {
        progressed = true;
    }

    /** On an empty poll: true once the time-out has passed with no {@link #progressed()} since. */
    boolean expired() {
        if ((++idle & (CHECK_EVERY - 1)) != 0) {
            return false;
        }
        long now = System.nanoTime();
        if (progressed) {
            progressed = false;
            deadline = now + timeoutNanos;
            return false;
        }
        return now - deadline > 0;
    }
}
