package dev.jrdma.collective;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32;

/**
 * What a {@link PeerGroup} puts on the wire of its own: the hello in each connection's private
 * data, and the immediate value of each control message and data arrival.
 *
 * <pre>
 * hello (connect request and accept private data, 16 bytes, big-endian)
 *  0               4               8               12              16
 *  +---------------+---------------+---------------+---------------+
 *  | magic "JRG1"  | group id      | sender's rank | group size    |
 *  +---------------+---------------+---------------+---------------+
 *  group id: CRC-32 of the member list ("host:port" joined by ','), so that two groups whose
 *  members reuse an address cannot join each other's connections.
 *
 * immediate value (32 bits) of every message and write-with-imm
 *  31        24 23                                               0
 *  +-----------+--------------------------------------------------+
 *  | kind      | collective number in the group, modulo 2^24       |
 *  +-----------+--------------------------------------------------+
 * </pre>
 *
 * A member sends READY (its receive region's descriptor as the payload) to each member that will
 * write to it; the writer writes with WRITE_WITH_IMM and the kind DATA, whose arrival tells the
 * receiver its block is in place (RC: every write posted before it has landed). The second
 * phase of the sequential all-to-all uses READY2 and DATA2; a barrier is one BARRIER each way.
 * SYNC is the first message on every group connection, each way: its 8-byte payload is the number
 * of collectives the sender has started, so that a member that joins again after a restart
 * numbers its collectives on from where the others are.
 */
final class GroupWireDescriptor {
    static final int HELLO_BYTES = 16;
    static final int MAGIC = 0x4A524731;   // "JRG1"
    static final int READY = 1, DATA = 2, READY2 = 3, DATA2 = 4, BARRIER = 5, SYNC = 6;
    static final int SEQ_MASK = 0xFFFFFF;

    private GroupWireDescriptor() {
    }

    static int groupId(List<InetSocketAddress> members) {
        CRC32 crc = new CRC32();
        for (InetSocketAddress a : members) {
            crc.update((a.getAddress().getHostAddress() + ":" + a.getPort() + ",").getBytes(StandardCharsets.UTF_8));
        }
        return (int) crc.getValue();
    }

    static byte[] hello(int groupId, int rank, int size) {
        return ByteBuffer.allocate(HELLO_BYTES).putInt(MAGIC).putInt(groupId).putInt(rank).putInt(size).array();
    }

    /** The sender's rank in a hello, or a message saying why it is not one of this group's. */
    static int helloRank(byte[] d, int groupId, int size) {
        if (d == null || d.length < HELLO_BYTES) {
            throw new IllegalArgumentException("no group hello (" + (d == null ? 0 : d.length) + " bytes of private data)");
        }
        ByteBuffer b = ByteBuffer.wrap(d);
        int magic = b.getInt(), group = b.getInt(), rank = b.getInt(), n = b.getInt();
        if (magic != MAGIC) {
            throw new IllegalArgumentException("not a PeerGroup hello (magic 0x" + Integer.toHexString(magic) + ")");
        }
        if (group != groupId || n != size) {
            throw new IllegalArgumentException("a hello of another group (group id 0x" + Integer.toHexString(group) + ", "
                    + n + " members; this one 0x" + Integer.toHexString(groupId) + ", " + size + " members):"
                    + " do all members pass the same member list?");
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("a hello from rank " + rank + ", not a rank of a group of " + size);
        }
        return rank;
    }

    /** The longest READY payload: a region descriptor (32 or 40 bytes today), with room to grow. */
    static final int MAX_DESCRIPTOR_BYTES = 64;

    /**
     * {@return null when a message of {@code kind} may carry {@code bytes} of payload, else what is
     * wrong} READY and READY2 carry a region descriptor, SYNC a count (8 bytes), the others nothing
     * the group reads (a control message carries one byte, a data arrival none); an unknown kind is
     * not a group message.
     */
    static String checkPayload(int kind, int bytes) {
        return switch (kind) {
            case READY, READY2 -> bytes <= MAX_DESCRIPTOR_BYTES ? null
                    : "a " + kindName(kind) + " of " + bytes + " bytes (a region descriptor is at most " + MAX_DESCRIPTOR_BYTES + ")";
            case SYNC -> bytes == Long.BYTES ? null : "a SYNC of " + bytes + " bytes (it is " + Long.BYTES + ")";
            case DATA, DATA2, BARRIER -> null;
            default -> "a message of kind " + kind + ", which is not a PeerGroup message";
        };
    }

    static int imm(int kind, int seq) {
        return kind << 24 | (seq & SEQ_MASK);
    }

    static int kind(int imm) {
        return imm >>> 24;
    }

    static String kindName(int kind) {
        return switch (kind) {
            case READY -> "READY";
            case DATA -> "DATA";
            case READY2 -> "READY2";
            case DATA2 -> "DATA2";
            case BARRIER -> "BARRIER";
            case SYNC -> "SYNC";
            default -> "kind " + kind;
        };
    }
}
