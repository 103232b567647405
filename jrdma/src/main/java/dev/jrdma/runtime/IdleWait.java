package dev.jrdma.runtime;

/**
 * What an {@link IoThread} does when it finds no work: the runtime's side of the public
 * {@code CompletionMode}, which the API maps onto it (the runtime sits below the API and
 * cannot name it). Each names an {@link IdleStrategy}, made anew for every loop.
 */
public enum IdleWait {
    /** Keep polling (yielding now and then): the lowest latency, one core per IO thread. */
    SPIN,
    /** Sleep on the event file descriptors at once, the completion queues armed. */
    SLEEP,
    /** Spin for a short budget after the last work, then sleep as {@link #SLEEP}. */
    SPIN_THEN_SLEEP;

    /** A new strategy of this kind, for one loop. */
    IdleStrategy newStrategy() {
        return switch (this) {
            case SPIN -> new BusySpinIdle();
            case SLEEP -> new SleepingIdle();
            case SPIN_THEN_SLEEP -> new SpinThenSleepIdle(SpinThenSleepIdle.SPIN_NANOS);
        };
    }
}
