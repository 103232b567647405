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

    /** Takes and acknowledges every pending event; returns how many there were (0: none). */
    int drainEvents();

    @Override
    void close();
}
