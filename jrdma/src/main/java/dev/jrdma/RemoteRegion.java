package dev.jrdma;

import dev.jrdma.spi.AccessFlags;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * Memory of a peer that one-sided operations target: address, length, rkey and the access the
 * owner granted. Travels as a 32-byte descriptor ({@link #toDescriptor}), or is built from a C
 * peer's own fields with {@link #of}.
 *
 * <pre>
 *  0      4        12       20     24      28      32
 *  | JRR1 | address | length | rkey | access | crc32 |   big-endian
 * </pre>
 *
 * The access word holds the {@code ibv_access_flags} granted, and bit 30 when the owner declared
 * direct write to persistent memory (the memory is pmem and writes reach it without passing a
 * volatile cache, librpma's {@code direct_write_to_pmem}).
 */
public final class RemoteRegion {
    static final int DESCRIPTOR_BYTES = 32;
    private static final int MAGIC = 0x4A525231;   // "JRR1"
    /** Access unknown: a region made with {@link #of}; the peer's device checks what is allowed. */
    static final int ACCESS_UNKNOWN = -1;
    /** In the access word: the owner declared direct write to persistent memory. */
    static final int DIRECT_WRITE_TO_PMEM = 1 << 30;

    private final long address;
    private final long length;
    private final int rkey;
    private final int access;

    RemoteRegion(long address, long length, int rkey, int access) {
        if (length < 0) {
            throw new IllegalArgumentException("remote region length " + length + " is negative");
        }
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.access = access;
    }

    /** A region from a peer's own format (for instance a C program that sent addr/len/rkey). */
    public static RemoteRegion of(long address, long length, int rkey) {
        return new RemoteRegion(address, length, rkey, ACCESS_UNKNOWN);
    }

    public long address() {
        return address;
    }

    public long length() {
        return length;
    }

    public int rkey() {
        return rkey;
    }

    /** True unless the owner said it does not grant {@code a} (unknown for {@link #of} regions: true). */
    public boolean allows(Access a) {
        return access == ACCESS_UNKNOWN || (access & a.bit) != 0;
    }

    /**
     * True when the owner declared that writes reach persistent memory directly, so that
     * {@link Connection#flush} with {@link FlushType#PERSISTENT} can be promised.
     */
    public boolean directWriteToPmem() {
        return access != ACCESS_UNKNOWN && (access & DIRECT_WRITE_TO_PMEM) != 0;
    }

    /**
     * This region with the owner's declaration of direct write to persistent memory: for a C
     * peer that says so in its own way (librpma's {@code rpma_peer_cfg}).
     */
    public RemoteRegion withDirectWriteToPmem() {
        int a = access == ACCESS_UNKNOWN ? (AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC
                | DIRECT_WRITE_TO_PMEM) : access | DIRECT_WRITE_TO_PMEM;
        return new RemoteRegion(address, length, rkey, a);
    }

    /** {@code length} bytes at {@code offset} of this region. */
    public RemoteRegion slice(long offset, long length) {
        Objects.checkFromIndexSize(offset, length, this.length);
        return new RemoteRegion(address + offset, length, rkey, access);
    }

    public byte[] toDescriptor() {
        ByteBuffer b = ByteBuffer.allocate(DESCRIPTOR_BYTES).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).putLong(address).putLong(length).putInt(rkey).putInt(access);
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(b.array(), 0, 28);
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /**
     * Reads a descriptor made by {@link #toDescriptor}.
     *
     * @throws IllegalArgumentException naming what is wrong: length, magic, checksum
     */
    public static RemoteRegion fromDescriptor(byte[] d) {
        Objects.requireNonNull(d, "descriptor");
        if (d.length != DESCRIPTOR_BYTES) {
            throw new IllegalArgumentException("a remote region descriptor is " + DESCRIPTOR_BYTES + " bytes, not " + d.length);
        }
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.BIG_ENDIAN);
        int magic = b.getInt();
        if (magic != MAGIC) {
            throw new IllegalArgumentException(String.format("not a remote region descriptor: magic 0x%08x, expected 0x%08x (\"JRR1\")", magic, MAGIC));
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(d, 0, 28);
        long address = b.getLong();
        long length = b.getLong();
        int rkey = b.getInt();
        int access = b.getInt();
        if (b.getInt() != (int) crc.getValue()) {
            throw new IllegalArgumentException("remote region descriptor is corrupt: checksum mismatch");
        }
        if (length < 0) {
            throw new IllegalArgumentException("remote region descriptor has a negative length " + length);
        }
        return new RemoteRegion(address, length, rkey, access);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RemoteRegion r && r.address == address && r.length == length && r.rkey == rkey
                && r.access == access;
    }

    @Override
    public int hashCode() {
        return Objects.hash(address, length, rkey, access);
    }

    @Override
    public String toString() {
        return String.format("RemoteRegion[address=0x%x, length=%d, rkey=0x%x]", address, length, rkey);
    }
}
