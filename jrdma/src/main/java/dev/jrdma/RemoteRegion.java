package dev.jrdma;

import dev.jrdma.spi.AccessFlags;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * Memory of a peer that one-sided operations target: address, length, rkey and the access the
 * owner granted, and for a lease the time it ends. Travels as a descriptor
 * ({@link #toDescriptor}), or is built from a C peer's own fields with {@link #of}.
 *
 * <pre>
 *  version 1, 32 bytes (no lease):
 *  0      4         12       20     24       28      32
 *  | JRR1 | address | length | rkey | access | crc32 |
 *
 *  version 2, 40 bytes (a lease):
 *  0      4         12       20     24       28                 36      40
 *  | JRR2 | address | length | rkey | access | lease end (ms)  | crc32 |
 * </pre>
 *
 * Big-endian; the CRC-32 covers every byte before it. The magic's last byte is the version: a
 * reader refuses a version it does not know, a wrong length for its version, a bad checksum
 * and a negative length, each with a message saying which. The access word holds the
 * {@code ibv_access_flags} granted, and bit 30 when the owner declared direct write to
 * persistent memory (the memory is pmem and writes reach it without passing a volatile cache,
 * librpma's {@code direct_write_to_pmem}). The lease end is wall-clock time (epoch
 * milliseconds) of the owner; it is advisory here (this side refuses to post after it) and
 * enforced by the owner, which drops the lease's registration then.
 */
public final class RemoteRegion {
    static final int DESCRIPTOR_BYTES = 32;
    static final int LEASED_DESCRIPTOR_BYTES = 40;
    private static final int MAGIC_PREFIX = 0x4A525200;   // "JRR" and a version byte
    private static final int MAGIC = MAGIC_PREFIX | '1';
    private static final int MAGIC_LEASED = MAGIC_PREFIX | '2';
    /** Access unknown: a region made with {@link #of}; the peer's device checks what is allowed. */
    static final int ACCESS_UNKNOWN = -1;
    /** In the access word: the owner declared direct write to persistent memory. */
    static final int DIRECT_WRITE_TO_PMEM = 1 << 30;

    private final long address;
    private final long length;
    private final int rkey;
    private final int access;
    /** When its lease ends (epoch milliseconds), or 0: no lease. */
    private final long leaseEnd;

    RemoteRegion(long address, long length, int rkey, int access) {
        this(address, length, rkey, access, 0);
    }

    RemoteRegion(long address, long length, int rkey, int access, long leaseEnd) {
        if (length < 0) {
            throw new IllegalArgumentException("remote region length " + length + " is negative");
        }
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.access = access;
        this.leaseEnd = leaseEnd;
    }

    /**
     * {@return a region from a peer's own format (for instance a C program that sent addr/len/rkey)}
     *
     * @param address the address of the region in the peer's memory
     * @param length its length in bytes
     * @param rkey its rkey
     */
    public static RemoteRegion of(long address, long length, int rkey) {
        return new RemoteRegion(address, length, rkey, ACCESS_UNKNOWN);
    }

    /** {@return the address of the region's first byte in the peer's memory} */
    public long address() {
        return address;
    }

    /** {@return the region's length in bytes: an operation reaching past it is refused before it is posted} */
    public long length() {
        return length;
    }

    /** {@return the key the peer's device checks every access against} */
    public int rkey() {
        return rkey;
    }

    /**
     * When the lease it was handed out with ends; empty when it has none.
     *
     * @return when the lease ends, if the region is a lease; empty otherwise
     */
    public java.util.Optional<java.time.Instant> leaseEnd() {
        return leaseEnd == 0 ? java.util.Optional.empty() : java.util.Optional.of(java.time.Instant.ofEpochMilli(leaseEnd));
    }

    /** The lease end in epoch milliseconds, 0 for none (the hot path's form). */
    long leaseEndMillis() {
        return leaseEnd;
    }

    /**
     * {@return true unless the owner said it does not grant {@code a} (unknown for {@link #of} regions:
     * true)}
     *
     * @param a the access
     */
    public boolean allows(Access a) {
        return access == ACCESS_UNKNOWN || (access & a.bit) != 0;
    }

    /**
     * {@return true when the owner declared that writes reach persistent memory directly, so that {@link
     * Connection#flush} with {@link FlushType#PERSISTENT} can be promised}
     */
    public boolean directWriteToPmem() {
        return access != ACCESS_UNKNOWN && (access & DIRECT_WRITE_TO_PMEM) != 0;
    }

    /**
     * {@return this region with the owner's declaration of direct write to persistent memory: for a C peer
     * that says so in its own way (librpma's {@code rpma_peer_cfg})}
     */
    public RemoteRegion withDirectWriteToPmem() {
        int a = access == ACCESS_UNKNOWN ? (AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC
                | DIRECT_WRITE_TO_PMEM) : access | DIRECT_WRITE_TO_PMEM;
        return new RemoteRegion(address, length, rkey, a, leaseEnd);
    }

    /**
     * {@code length} bytes at {@code offset} of this region.
     *
     * @param offset where the slice starts, from the start of this region
     * @param length the slice's length in bytes
     * @return the slice, with the same key and access
     */
    public RemoteRegion slice(long offset, long length) {
        Objects.checkFromIndexSize(offset, length, this.length);
        return new RemoteRegion(address + offset, length, rkey, access, leaseEnd);
    }

    /** {@return its descriptor: version 1 (32 bytes) without a lease, version 2 (40 bytes) with one} */
    public byte[] toDescriptor() {
        boolean leased = leaseEnd != 0;
        int n = leased ? LEASED_DESCRIPTOR_BYTES : DESCRIPTOR_BYTES;
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.BIG_ENDIAN);
        b.putInt(leased ? MAGIC_LEASED : MAGIC).putLong(address).putLong(length).putInt(rkey).putInt(access);
        if (leased) {
            b.putLong(leaseEnd);
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(b.array(), 0, n - 4);
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /**
     * Reads a descriptor made by {@link #toDescriptor}, of either version.
     *
     * @param d the descriptor's bytes, as {@link #toDescriptor()} made them
     * @return the region the descriptor names
     * @throws IllegalArgumentException naming what is wrong: magic, version, length, checksum
     */
    public static RemoteRegion fromDescriptor(byte[] d) {
        Objects.requireNonNull(d, "descriptor");
        if (d.length < 4) {
            throw new IllegalArgumentException("not a remote region descriptor: " + d.length + " bytes (a descriptor is "
                    + DESCRIPTOR_BYTES + " or " + LEASED_DESCRIPTOR_BYTES + ")");
        }
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.BIG_ENDIAN);
        int magic = b.getInt();
        if ((magic & 0xFFFFFF00) != MAGIC_PREFIX) {
            throw new IllegalArgumentException(String.format("not a remote region descriptor: magic 0x%08x, expected \"JRR\" and a version", magic));
        }
        boolean leased;
        if (magic == MAGIC) {
            leased = false;
        } else if (magic == MAGIC_LEASED) {
            leased = true;
        } else {
            throw new IllegalArgumentException("remote region descriptor version '" + (char) (magic & 0xFF)
                    + "' is not one this jrdma reads (1 and 2): the peer runs a newer jrdma");
        }
        int want = leased ? LEASED_DESCRIPTOR_BYTES : DESCRIPTOR_BYTES;
        if (d.length != want) {
            throw new IllegalArgumentException("a version " + (leased ? 2 : 1) + " remote region descriptor is " + want
                    + " bytes, not " + d.length + " (truncated or padded)");
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(d, 0, want - 4);
        long address = b.getLong();
        long length = b.getLong();
        int rkey = b.getInt();
        int access = b.getInt();
        long leaseEnd = leased ? b.getLong() : 0;
        if (b.getInt() != (int) crc.getValue()) {
            throw new IllegalArgumentException("remote region descriptor is corrupt: checksum mismatch");
        }
        if (length < 0) {
            throw new IllegalArgumentException("remote region descriptor has a negative length " + length);
        }
        if (leased && leaseEnd <= 0) {
            throw new IllegalArgumentException("remote region descriptor has a lease that ends at " + leaseEnd + " (not a time)");
        }
        return new RemoteRegion(address, length, rkey, access, leaseEnd);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RemoteRegion r && r.address == address && r.length == length && r.rkey == rkey
                && r.access == access && r.leaseEnd == leaseEnd;
    }

    @Override
    public int hashCode() {
        return Objects.hash(address, length, rkey, access, leaseEnd);
    }

    @Override
    public String toString() {
        return String.format("RemoteRegion[address=0x%x, length=%d, rkey=0x%x%s]", address, length, rkey,
                leaseEnd == 0 ? "" : ", lease ends " + java.time.Instant.ofEpochMilli(leaseEnd));
    }
}
