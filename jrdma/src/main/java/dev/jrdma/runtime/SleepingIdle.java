package dev.jrdma.runtime;

/** Sleeps on the event fds at the first idle pass, the completion queues armed: no CPU while idle. */
final class SleepingIdle implements IdleStrategy {
    @Override
    public void idle(Sleep sleep) {
        sleep.sleep(DutyCycle.MAX_SLEEP_MS);
    }

    @Override
    public void reset() {
    }
}
