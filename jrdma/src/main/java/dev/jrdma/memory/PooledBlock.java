package dev.jrdma.memory;

import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A block of registered memory lent by a {@link RegisteredMemoryPool}: {@link #segment} is the
 * size asked for, at the start of a block of its size class. {@link #close} gives it back, once:
 * a second close does nothing, so the pool never holds one block twice.
 */
public final class PooledBlock implements AutoCloseable {
    private static final VarHandle RELEASED;

    static {
        try {
            RELEASED = MethodHandles.lookup().findVarHandle(PooledBlock.class, "released", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RegisteredMemoryPool pool;
    final PoolChunk chunk;
    final int block;
    private final MemorySegment segment;
    private volatile int released;

    PooledBlock(RegisteredMemoryPool pool, PoolChunk chunk, int block, MemorySegment segment) {
        this.pool = pool;
        this.chunk = chunk;
        this.block = block;
        this.segment = segment;
    }

    /** The memory: the size asked for. */
    public MemorySegment segment() {
        return segment;
    }

    /** The registration it lies in (a chunk's, shared with the other blocks of the chunk). */
    public MemoryRegistration registration() {
        return chunk.registration;
    }

    /** The bytes it holds in the pool: its size class, or the whole registration for a large one. */
    public long blockSize() {
        return chunk.blockSize;
    }

    public boolean isReleased() {
        return released != 0;
    }

    /** Gives the block back to the pool; idempotent and thread-safe. */
    @Override
    public void close() {
        if (RELEASED.compareAndSet(this, 0, 1)) {
            pool.free(this);
        }
    }

    @Override
    public String toString() {
        return String.format("PooledBlock[address=0x%x, size=%d, block=%d]", segment.address(), segment.byteSize(),
                chunk.blockSize);
    }
}
