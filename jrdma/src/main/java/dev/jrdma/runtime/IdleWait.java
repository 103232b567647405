package dev.jrdma.runtime;

/**
 * What an {@link IoThread} does when it finds no work: the runtime's side of the public
 * {@code CompletionMode}, which the API maps onto it (the runtime sits below the API and
 * cannot name it).
 */
public enum IdleWait {
    /** Keep polling (yielding now and then): the lowest latency, one core per IO thread. */
    SPIN,
    /** Sleep on the event file descriptors at once, the completion queues armed. */
    SLEEP,
    /** Spin for a short budget after the last work, then sleep as {@link #SLEEP}. */
    SPIN_THEN_SLEEP
}
