package dev.jrdma.spi;

/**
 * The event side of completion queues: after {@link CompletionQueue#arm()}, the next completion
 * makes {@link #fd()} readable. Used by one IO thread.
 */
public interface CompletionChannel extends AutoCloseable {
    /** A pollable fd (non-blocking). */
    int fd();

    /**
     * Said once, before any completion queue is made with it, when the thread that owns the
     * channel only polls (POLLING, INLINE) and so never arms and sleeps: a provider may then
     * skip the fence that a wake-up after a completion made outside the thread needs.
     */
    default void pollingOnly() {
    }

    /**
     * Takes and acknowledges every pending event; returns how many there were (0: none). It also
     * wakes the resting completion queues ({@link CompletionQueue#rest}) that the events concern.
     */
    int drainEvents();

    /**
     * Whether its completion queues can rest ({@link CompletionQueue#rest}) and be woken by
     * readiness: then its IO thread polls {@link #pollReadiness} every pass. Default: no.
     */
    default boolean readinessDriven() {
        return false;
    }

    /**
     * One look, without blocking, at which of its resting completion queues have something to
     * do (their sockets are ready); wakes them, and returns how many it woke. Its IO thread's,
     * every pass. Default: none.
     */
    default int pollReadiness() {
        return 0;
    }

    /**
     * Its IO thread's timer (run at least every 50 ms, busy or not): the keep-alives and idle
     * timeouts of its connections, resting ones included (software providers). Returns the work
     * done. Default: none.
     */
    default int checkIdle() {
        return 0;
    }

    @Override
    void close();
}
