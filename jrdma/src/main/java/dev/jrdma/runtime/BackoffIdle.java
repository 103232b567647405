package dev.jrdma.runtime;

/**
 * Backs off as Agrona's {@code BackoffIdleStrategy}: after the last work it spins for
 * {@code spins} idle passes, then yields for {@code yields} more, then sleeps. Where Agrona parks
 * for a growing time, this sleeps on the loop's event fds with its completion queues armed, as
 * {@link SleepingIdle} does: a completion ends the sleep at once, so the last phase costs no
 * latency beyond the wake-up and no CPU. Counted in passes, not time: no clock read per idle pass.
 */
final class BackoffIdle implements IdleStrategy {
    private final int spins;
    private final int yields;
    private int idlePasses;

    BackoffIdle(int spins, int yields) {
        this.spins = spins;
        this.yields = yields;
    }

    @Override
    public void idle(Sleep sleep) {
        int n = ++idlePasses;
        if (n <= spins) {
            Thread.onSpinWait();
        } else if (n - spins <= yields) {
            Thread.yield();
        } else {
            sleep.sleep(DutyCycle.MAX_SLEEP_MS);
            idlePasses = 0;   // woken: the next idle pass spins again, as after work
        }
    }

    @Override
    public void reset() {
        idlePasses = 0;
    }
}
