package dev.jrdma.runtime;

/**
 * Spins for {@link #spinNanos} after the last work (about the round trip of a small operation),
 * then sleeps as {@link SleepingIdle}. Measured in time, not passes: a pass costs a few hundred ns
 * on verbs but a syscall or two per active connection on tcp, and 64 passes over many connections
 * before the first sleep kept an idle loop busy. After a sleep it spins again from the start.
 */
final class SpinThenSleepIdle implements IdleStrategy {
    /** The default spin: 50 us. */
    static final long SPIN_NANOS = 50_000;
    private final long spinNanos;
    private int idlePasses;
    private long idleSince;

    SpinThenSleepIdle(long spinNanos) {
        this.spinNanos = spinNanos;
    }

    @Override
    public void idle(Sleep sleep) {
        if (idlePasses++ == 0) {
            idleSince = System.nanoTime();
        }
        if (idlePasses < 2 || System.nanoTime() - idleSince < spinNanos) {
            BusySpinIdle.spin(idlePasses);
            return;
        }
        sleep.sleep(DutyCycle.MAX_SLEEP_MS);
        idlePasses = 0;
    }

    @Override
    public void reset() {
        idlePasses = 0;
    }
}
