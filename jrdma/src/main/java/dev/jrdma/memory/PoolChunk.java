package dev.jrdma.memory;

import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;

/**
 * One registration of the pool: a run of memory registered once and cut into equal blocks of
 * one size class (a slab), or a single block for a request larger than the largest class.
 */
final class PoolChunk {
    final int index;
    /** The size class of its blocks; -1 for a chunk that is one large block. */
    final int sizeClass;
    final long blockSize;
    final MemorySegment memory;
    final MemoryRegistration registration;
    private final AutoCloseable backing;
    /**
     * Per block: 1 once it was handed out. A block never handed out is still the zeroed memory
     * the chunk came with, so allocating it zeroed needs no fill. Each element is written by the
     * one thread that holds the block (array elements do not tear), and handed over with the
     * block through the free lists' locks.
     */
    final byte[] used;

    PoolChunk(int index, int sizeClass, long blockSize, MemorySegment memory, MemoryRegistration registration,
              AutoCloseable backing) {
        this.index = index;
        this.sizeClass = sizeClass;
        this.blockSize = blockSize;
        this.memory = memory;
        this.registration = registration;
        this.backing = backing;
        this.used = new byte[(int) (memory.byteSize() / blockSize)];
    }

    int blocks() {
        return used.length;
    }

    /** Deregisters, then frees the memory. */
    void free() {
        try {
            registration.close();
        } finally {
            try {
                backing.close();
            } catch (Exception e) {
                throw new IllegalStateException("freeing a pool chunk of " + memory.byteSize() + " bytes failed", e);
            }
        }
    }
}
