package dev.jrdma.provider.tcp;

import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * What the tcp provider needs to let two peers of one host reach each other's memory directly
 * (the {@code shm} provider implements it): shareable memory, where a peer finds it, and
 * mapping a peer's. With it, a connection whose handshake shows the same host (boot id) sends
 * one-sided operations on shareable regions as plain loads, stores and CPU atomics on the
 * mapping, with no CPU of the target; everything else keeps the tcp path.
 */
public interface TcpSameHost {
    /** Zeroed shareable memory of {@code size} bytes, or null when it cannot be made. */
    ShareableMemory allocate(long size);

    /**
     * Where a peer of this host opens {@code memory}: {fd, offset of memory in that fd}, or null
     * when it is not shareable (the user's own memory): that region keeps the tcp path.
     */
    long[] locate(MemorySegment memory);

    /** Maps {@code length} bytes at {@code offset} of fd {@code fd} of process {@code pid}; null when it cannot. */
    MemorySegment map(long pid, int fd, long offset, long length, boolean writable, Arena arena);

    /** The device closes: memory no live allocation uses is freed; the rest goes with its last allocation. */
    default void close() {
    }
}
