package dev.jrdma.netty;

import dev.jrdma.Rdma;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledHeapByteBuf;

import java.util.Objects;

/**
 * Netty buffers in jrdma's registered memory: a direct buffer of this allocator is a region of
 * its {@code Rdma}'s registered-memory pool, so a jrdma channel of that {@code Rdma} sends it
 * without copying it (writes of 4 KiB or more, see {@link JrdmaSocketChannel}); heap buffers are
 * ordinary ones. Use the group's, for the channels of that group:
 * <pre>{@code
 * JrdmaEventLoopGroup group = new JrdmaEventLoopGroup();
 * new Bootstrap().group(group).channel(JrdmaSocketChannel.class)
 *         .option(ChannelOption.ALLOCATOR, group.allocator())...
 * }</pre>
 *
 * <p>The pool ({@link Rdma#allocate}) keeps blocks of powers of two from 64 B to 1 MiB in
 * per-thread caches and registered chunks, so allocating and releasing cost no system call; a
 * buffer larger than 1 MiB gets a registration of its own (a system call to take and one to give
 * back). The memory is lent uninitialized, as Netty's direct buffers are. Buffers are released as
 * Netty's are (reference counts), and tracked by Netty's leak detector.
 */
public final class JrdmaByteBufAllocator extends AbstractByteBufAllocator {
    private final Rdma rdma;

    /**
     * An allocator lending {@code rdma}'s registered memory.
     *
     * @param rdma the jrdma instance whose channels send these buffers without a copy
     */
    public JrdmaByteBufAllocator(Rdma rdma) {
        super(true);
        this.rdma = Objects.requireNonNull(rdma, "rdma");
    }

    /** {@return the jrdma instance whose memory this allocator lends} */
    public Rdma rdma() {
        return rdma;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return new UnpooledHeapByteBuf(this, initialCapacity, maxCapacity);
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(new RegisteredByteBuf(this, initialCapacity, maxCapacity));
    }

    /** {@return true: the memory comes from jrdma's pool} */
    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }
}
