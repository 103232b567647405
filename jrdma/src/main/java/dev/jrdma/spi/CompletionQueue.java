package dev.jrdma.spi;

/**
 * A completion queue. {@link #poll} and {@link #arm} belong to one thread (the IO thread that
 * owns it); they allocate nothing.
 */
public interface CompletionQueue extends AutoCloseable {
    /** Hands up to {@code max} completions to {@code sink}; returns how many (0: none now). */
    int poll(CompletionSink sink, int max);

    /** Asks for an event on the channel at the next completion (no-op without a channel). */
    void arm();

    @Override
    void close();
}
