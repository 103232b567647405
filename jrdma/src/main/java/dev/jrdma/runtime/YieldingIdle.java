package dev.jrdma.runtime;

/**
 * Keeps polling, and gives the CPU up after every idle pass ({@code Thread.yield}), as Agrona's
 * {@code YieldingIdleStrategy}: nearly the latency of a busy spin where the loop has a core to
 * itself, and on a shared one the threads it waits for (a peer on the same host, the
 * application) run at once. Never sleeps, so its completion queues need not be armed.
 */
final class YieldingIdle implements IdleStrategy {
    @Override
    public void idle(Sleep sleep) {
        Thread.yield();
    }

    @Override
    public void reset() {
    }
}
