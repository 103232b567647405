package dev.jrdma.provider.tcp;

/**
 * A single-producer single-consumer byte stream in memory shared with a peer of this host: what
 * a same-host connection sends its frames through instead of the socket (the shm provider's
 * ring). Each side writes its own and reads the peer's. Positions are byte counts that only
 * grow; the peer writes the other side's position, so every position read from it is checked
 * (an impossible one is -1, and the connection ends). Producer methods: the transmit side,
 * under the transmit lock; consumer methods: the progress thread.
 */
public interface FrameRing {
    // ---- producer

    /** The position after what has been written (the producer's own view). */
    long produced();

    /**
     * Copies up to {@code length} bytes from {@code address} into the ring at position {@code at},
     * as far as there is room; how many, or -1 when the consumer's position is impossible.
     */
    long write(long address, long length, long at);

    /** Makes the bytes up to {@code position} visible; true when the consumer asked to be woken (ring it). */
    boolean publish(long position);

    /** The producer has bytes waiting for room (or no longer): the consumer should ring when it makes some. */
    void waitForRoom(boolean waiting);

    // ---- consumer

    /** Copies up to {@code length} readable bytes to {@code address}: how many (0: none), or -1 when the producer's position is impossible. */
    long read(long address, long length);

    /** After reading: true when the producer waits for room (the flag is taken: ring it once). */
    boolean producerWaits();

    /** About to sleep: asks the producer to ring; true when bytes are readable already. */
    boolean arm();
}
