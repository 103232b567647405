package dev.jrdma;

import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Registered memory of this process: the source or target of operations, and, through
 * {@link #toRemote()}, what peers may access. Slices share their parent's registration; closing
 * the parent deregisters it (any later remote use of its rkey fails) and frees its memory when
 * jrdma allocated it.
 */
public final class LocalRegion implements AutoCloseable {
    private final MemorySegment segment;
    private final MemoryRegistration registration;
    private final LocalRegion parent;
    private final AutoCloseable owner;
    private volatile boolean closed;
    private volatile boolean directWriteToPmem;

    LocalRegion(MemorySegment segment, MemoryRegistration registration, AutoCloseable owner) {
        this(segment, registration, null, owner);
    }

    private LocalRegion(MemorySegment segment, MemoryRegistration registration, LocalRegion parent, AutoCloseable owner) {
        this.segment = segment;
        this.registration = registration;
        this.parent = parent;
        this.owner = owner;
    }

    /** The memory, to read and write from Java. */
    public MemorySegment segment() {
        return segment;
    }

    public long address() {
        return segment.address();
    }

    public long length() {
        return segment.byteSize();
    }

    public int lkey() {
        return registration.lkey();
    }

    public int rkey() {
        return registration.rkey();
    }

    boolean allows(int accessBit) {
        return (registration.access() & accessBit) != 0;
    }

    /** {@code length} bytes at {@code offset}, sharing this registration. */
    public LocalRegion slice(long offset, long length) {
        Objects.checkFromIndexSize(offset, length, segment.byteSize());
        return new LocalRegion(segment.asSlice(offset, length), registration, root(), null);
    }

    private LocalRegion root() {
        return parent == null ? this : parent;
    }

    boolean isClosed() {
        return root().closed;
    }

    /** What a peer needs to access this region: address, length, rkey and the access granted. */
    public RemoteRegion toRemote() {
        int remoteBits = registration.access() & (AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC);
        if (root().directWriteToPmem) {
            remoteBits |= RemoteRegion.DIRECT_WRITE_TO_PMEM;
        }
        return new RemoteRegion(segment.address(), segment.byteSize(), registration.rkey(), remoteBits);
    }

    /**
     * Declares that this memory is persistent and that the device writes reach it directly (no
     * volatile cache such as DDIO on the way), so peers may ask for {@link FlushType#PERSISTENT}
     * flushes to it. jrdma cannot check this: it is the owner's promise, as in librpma. Applies
     * to the descriptors made after it, of this region and its slices.
     */
    public LocalRegion declareDirectWriteToPmem() {
        root().directWriteToPmem = true;
        return this;
    }

    /** Deregisters (for a slice: nothing, the parent owns the registration). */
    @Override
    public void close() {
        if (parent != null || closed) {
            return;
        }
        closed = true;
        registration.close();
        if (owner != null) {
            try {
                owner.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    @Override
    public String toString() {
        return String.format("LocalRegion[address=0x%x, length=%d, lkey=0x%x, access=%s]", segment.address(),
                segment.byteSize(), registration.lkey(), AccessFlags.names(registration.access()));
    }
}
