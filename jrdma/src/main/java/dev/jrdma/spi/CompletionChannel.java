package dev.jrdma.spi;

/**
 * The event side of completion queues: after {@link CompletionQueue#arm()}, the next completion
 * makes {@link #fd()} readable. Used by one IO thread.
 */
public interface CompletionChannel extends AutoCloseable {
    /** A pollable fd (non-blocking). */
    int fd();

    /** Takes and acknowledges every pending event; returns how many there were (0: none). */
    int drainEvents();

    @Override
    void close();
}
