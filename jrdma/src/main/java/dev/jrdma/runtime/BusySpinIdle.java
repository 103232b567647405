package dev.jrdma.runtime;

/**
 * Keeps polling: the lowest latency, one core per loop. Yields every {@value #YIELD_EVERY} idle
 * passes, so that a spinning loop lets the threads it waits for run when there are more runnable
 * threads than CPUs (two vCPUs, two processes of one host).
 */
final class BusySpinIdle implements IdleStrategy {
    static final int YIELD_EVERY = 64;
    private int idlePasses;

    @Override
    public void idle(Sleep sleep) {
        spin(++idlePasses);
    }

    static void spin(int idlePasses) {
        if ((idlePasses & (YIELD_EVERY - 1)) == 0) {
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
    }

    @Override
    public void reset() {
        idlePasses = 0;
    }
}
