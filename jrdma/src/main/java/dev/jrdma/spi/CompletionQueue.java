package dev.jrdma.spi;

/**
 * A completion queue. {@link #poll} and {@link #arm} belong to one thread (the IO thread that
 * owns it); they allocate nothing.
 */
public interface CompletionQueue extends AutoCloseable {
    /** Hands up to {@code max} completions to {@code sink}; returns how many (0: none now). */
    int poll(CompletionSink sink, int max);

    /**
     * Frames of the peer's handled by the last {@link #poll}s that gave no completion here
     * (a software provider applying the peer's WRITEs, READs and atomics), since the last call;
     * 0 where a device serves the peer. A poller counts them as work: it neither sleeps nor
     * stops spinning while it serves, and a pass that served something is followed by another
     * (what a pass leaves for the next, such as an ACK waiting for a frame to ride on, is sent).
     */
    default int takeServed() {
        return 0;
    }

    /** Asks for an event on the channel at the next completion (no-op without a channel). */
    void arm();

    @Override
    void close();
}
