package dev.jrdma.netty;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.util.internal.PlatformDependent;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A direct {@link ByteBuf} whose memory is a region of jrdma's registered-memory pool
 * ({@link Rdma#allocateUninitialized}): a channel of the same {@code Rdma} sends its bytes straight
 * from it, with no copy ({@link #regionOf}). Growing it takes a new region and gives the old one
 * back; so does its last release.
 *
 * <p>Its address is offered ({@link #hasMemoryAddress}) exactly when Netty's own direct buffers
 * offer theirs (when Netty has {@code sun.misc.Unsafe}): Netty code that sees an address writes
 * through {@code Unsafe}, which it may only do when it has it.
 */
final class RegisteredByteBuf extends UnpooledDirectByteBuf {
    private static final boolean OFFERS_ADDRESS = PlatformDependent.hasUnsafe();

    private final Rdma rdma;
    // Set by allocateDirect, which the super constructor calls first: no initializers here, so
    // nothing overwrites them after it (the fields Java assigns before super() are the two above).
    /** The region of the current memory, and that memory as the ByteBuffer the super class holds. */
    private LocalRegion region;
    private ByteBuffer memory;
    /** A growth's new region, current once the super class frees the old memory. */
    private LocalRegion grown;
    private ByteBuffer grownMemory;

    RegisteredByteBuf(JrdmaByteBufAllocator alloc, int initialCapacity, int maxCapacity) {
        this.rdma = alloc.rdma();
        super(alloc, initialCapacity, maxCapacity);
    }

    /** Takes a region of the pool: for the first memory, and for each capacity change. */
    @Override
    protected ByteBuffer allocateDirect(int capacity) {
        // The pool has no empty regions: a buffer of capacity 0 holds a byte it does not show.
        LocalRegion r = rdma.allocateUninitialized(Math.max(1, capacity));
        ByteBuffer bb = r.segment().asSlice(0, capacity).asByteBuffer();
        if (region == null) {
            region = r;
            memory = bb;
        } else {
            if (grown != null) {
                grown.close();   // a growth whose copy failed: its region was never used
            }
            grown = r;
            grownMemory = bb;
        }
        return bb;
    }

    /** Gives a memory back: the old one after a capacity change, or the last at the final release. */
    @Override
    protected void freeDirect(ByteBuffer buffer) {
        if (buffer == memory) {
            region.close();
            region = grown;
            memory = grownMemory;
            grown = null;
            grownMemory = null;
        } else if (buffer == grownMemory) {
            grown.close();
            grown = null;
            grownMemory = null;
        }
    }

    /** {@return the region of the current memory (null once released)} */
    LocalRegion region() {
        return refCnt() > 0 ? region : null;
    }

    /** {@return the {@code Rdma} whose pool lent the memory} */
    Rdma rdma() {
        return rdma;
    }

    @Override
    public boolean hasMemoryAddress() {
        return OFFERS_ADDRESS;
    }

    @Override
    public long memoryAddress() {
        if (!OFFERS_ADDRESS) {
            throw new UnsupportedOperationException("no memory address: Netty runs without sun.misc.Unsafe");
        }
        ensureAccessible();
        return region.address();
    }

    /**
     * Where {@code length} bytes of {@code buf} at {@code index} lie in registered memory of
     * {@code rdma}: the region they are in, and its offset in it. Null when they do not lie in one
     * buffer of a {@link JrdmaByteBufAllocator} of {@code rdma} (a heap or composite buffer, another
     * allocator's, another Rdma's): such bytes are copied.
     */
    static RegisteredSpan regionOf(ByteBuf buf, int index, int length, Rdma rdma) {
        RegisteredByteBuf root = null;
        int depth = 0;
        for (ByteBuf b = buf; b != null && depth < 8; b = b.unwrap(), depth++) {
            if (b instanceof RegisteredByteBuf r) {
                root = r;
                break;
            }
        }
        if (root == null || root.rdma != rdma) {
            return null;
        }
        LocalRegion r = root.region();
        if (r == null) {
            return null;
        }
        long offset;
        if (buf == root) {
            offset = index;
        } else if (buf.hasMemoryAddress()) {
            offset = buf.memoryAddress() + index - r.address();
        } else {
            // A derived buffer (slice, duplicate, leak-aware wrapper) without an address: its
            // NIO view says where its bytes are.
            offset = MemorySegment.ofBuffer(buf.nioBuffer(index, length)).address() - r.address();
        }
        if (offset < 0 || offset + length > r.length()) {
            return null;
        }
        return new RegisteredSpan(r, offset);
    }

    /** Bytes in a registered region: the region and where in it they start. */
    record RegisteredSpan(LocalRegion region, long offset) {
    }
}
