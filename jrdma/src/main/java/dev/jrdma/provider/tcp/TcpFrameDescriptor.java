package dev.jrdma.provider.tcp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The tcp provider's wire frame, after the handshake ({@link TcpHandshake}). Every frame is a
 * fixed 48-byte header, little-endian, followed by {@code length} payload bytes.
 *
 * <pre>
 *  0       1       2               4                               8
 *  +-------+-------+---------------+-------------------------------+
 *  | type  | flags |    status     |            length             |
 *  +-------+-------+---------------+-------------------------------+
 *  |                        sequence number                        |  8
 *  +---------------------------------------------------------------+
 *  |                 remote address (target's VA)                  | 16
 *  +-------------------------------+-------------------------------+
 *  |             rkey              |         immediate data        | 24
 *  +-------------------------------+-------------------------------+
 *  |           compare / add  ·  atomic result (responses)         | 32
 *  +---------------------------------------------------------------+
 *  |                             swap                              | 40
 *  +---------------------------------------------------------------+
 *  |  payload: length bytes (SEND, WRITE, READ_RESPONSE)  ...        48
 * </pre>
 *
 * <p>Requests go from the initiator, in posting order, each with the next sequence number
 * (from 1). The target applies them in that order and answers: an ACK for the highest
 * sequence that asked for one ({@link #FLAG_ACK_REQUESTED}: signaled requests; acks are
 * cumulative, so one covers a run; it rides on the next frame going back, see
 * {@link #FLAG_ACK_PIGGYBACK}, or is an {@link #ACK} frame of its own), a {@link #READ_RESPONSE} or {@link #ATOMIC_RESPONSE}
 * for every read and atomic, and a {@link #NAK} with an {@code ibv_wc_status} value for the
 * first request it refused, after which it applies nothing more on that connection: as in RC,
 * a remote access error ends the connection.
 *
 * <p>{@code length} is checked before anything is read into memory: a request may only carry
 * a payload as large as the target allows ({@link #MAX_PAYLOAD}), a READ_RESPONSE only as long
 * as the read asked for; anything else closes the connection as malformed.
 */
public final class TcpFrameDescriptor {
    public static final int HEADER_SIZE = 48;
    /** The most a SEND or WRITE carries in one frame, and the most a READ asks for (2 GiB - 1). */
    public static final int MAX_PAYLOAD = Integer.MAX_VALUE;

    /** Frame types: requests. */
    public static final byte SEND = 1, WRITE = 2, READ_REQUEST = 3, COMPARE_SWAP = 4, FETCH_ADD = 5;
    /**
     * Request: the range [remote address, + compare/add) of {@code rkey} holds every write
     * before it; immediate data 1: and is on stable storage (a mapped file is forced).
     */
    public static final byte FLUSH = 6;
    /** Frame types: responses. */
    public static final byte ACK = 16, NAK = 17, READ_RESPONSE = 18, ATOMIC_RESPONSE = 19;
    /**
     * Response: the SEND (or WRITE_WITH_IMM) with this sequence number waits for a receive to be
     * posted (RNR), and everything before it is acknowledged. Sent while it waits, every
     * {@link TcpQueuePair#RNR_TIMER_MS} / 2 ms: as an RNR NAK on verbs it is flow control, not an
     * error, and it tells the requester the peer is alive (its answer timer starts again).
     */
    public static final byte RNR_WAIT = 20;
    /** Frame type: the sender disconnects; nothing follows. */
    public static final byte DISCONNECT = 32;
    /**
     * Same host only (shm), outside the request sequence. MAP_REQUEST: where is region
     * {@code rkey}? MAP_RESPONSE: status 0 and, for {@code rkey}, its base address (remote
     * address), length (compare/add) and access (sequence); the memfd holding it was sent just
     * before on the same-host channel ({@link SameHostChannel#MAP}: key, offset, length, and the
     * descriptor); status 1: not shareable, keep the socket.
     * UNMAP: region {@code rkey} was closed; drop its mapping. UNMAP_ACK: the mapping of
     * region {@code rkey} is dropped, nothing of this side touches it any more (its owner
     * may reuse the memory).
     */
    public static final byte MAP_REQUEST = 33, MAP_RESPONSE = 34, UNMAP = 35, UNMAP_ACK = 36;

    /** The request wants its completion reported (an ACK up to here). */
    public static final int FLAG_ACK_REQUESTED = 1;
    /** The immediate-data field is meaningful (SEND_WITH_IMM, WRITE_WITH_IMM). */
    public static final int FLAG_IMM = 2;
    /**
     * The swap field carries a cumulative ACK of the receiver's requests (any frame but
     * COMPARE_SWAP, whose swap is its own): acks ride on traffic going that way anyway, and a
     * standalone {@link #ACK} is sent only when none goes within one progress pass.
     */
    public static final int FLAG_ACK_PIGGYBACK = 4;

    public static final long TYPE = 0, FLAGS = 1, STATUS = 2, LENGTH = 4, SEQUENCE = 8, REMOTE_ADDRESS = 16,
            RKEY = 24, IMM = 28, COMPARE_ADD = 32, SWAP = 40;

    static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private TcpFrameDescriptor() {
    }

    /** Writes a whole header at {@code offset} of {@code buf}. */
    public static void write(MemorySegment buf, long offset, byte type, int flags, int status, int length, long sequence,
                             long remoteAddress, int rkey, int imm, long compareAdd, long swap) {
        buf.set(ValueLayout.JAVA_BYTE, offset + TYPE, type);
        buf.set(ValueLayout.JAVA_BYTE, offset + FLAGS, (byte) flags);
        buf.set(SHORT, offset + STATUS, (short) status);
        buf.set(INT, offset + LENGTH, length);
        buf.set(LONG, offset + SEQUENCE, sequence);
        buf.set(LONG, offset + REMOTE_ADDRESS, remoteAddress);
        buf.set(INT, offset + RKEY, rkey);
        buf.set(INT, offset + IMM, imm);
        buf.set(LONG, offset + COMPARE_ADD, compareAdd);
        buf.set(LONG, offset + SWAP, swap);
    }

    public static byte type(MemorySegment buf, long offset) {
        return buf.get(ValueLayout.JAVA_BYTE, offset + TYPE);
    }

    public static int flags(MemorySegment buf, long offset) {
        return buf.get(ValueLayout.JAVA_BYTE, offset + FLAGS) & 0xff;
    }

    public static int status(MemorySegment buf, long offset) {
        return Short.toUnsignedInt(buf.get(SHORT, offset + STATUS));
    }

    /** The payload length as sent: negative values are lies, and refused by the reader. */
    public static int length(MemorySegment buf, long offset) {
        return buf.get(INT, offset + LENGTH);
    }

    public static long sequence(MemorySegment buf, long offset) {
        return buf.get(LONG, offset + SEQUENCE);
    }

    public static long remoteAddress(MemorySegment buf, long offset) {
        return buf.get(LONG, offset + REMOTE_ADDRESS);
    }

    public static int rkey(MemorySegment buf, long offset) {
        return buf.get(INT, offset + RKEY);
    }

    public static int imm(MemorySegment buf, long offset) {
        return buf.get(INT, offset + IMM);
    }

    public static long compareAdd(MemorySegment buf, long offset) {
        return buf.get(LONG, offset + COMPARE_ADD);
    }

    public static long swap(MemorySegment buf, long offset) {
        return buf.get(LONG, offset + SWAP);
    }

    /** "WRITE", "NAK"... for messages. */
    public static String typeName(int type) {
        return switch (type) {
            case SEND -> "SEND";
            case WRITE -> "WRITE";
            case READ_REQUEST -> "READ_REQUEST";
            case COMPARE_SWAP -> "COMPARE_SWAP";
            case FETCH_ADD -> "FETCH_ADD";
            case FLUSH -> "FLUSH";
            case ACK -> "ACK";
            case NAK -> "NAK";
            case READ_RESPONSE -> "READ_RESPONSE";
            case ATOMIC_RESPONSE -> "ATOMIC_RESPONSE";
            case RNR_WAIT -> "RNR_WAIT";
            case DISCONNECT -> "DISCONNECT";
            case MAP_REQUEST -> "MAP_REQUEST";
            case MAP_RESPONSE -> "MAP_RESPONSE";
            case UNMAP -> "UNMAP";
            case UNMAP_ACK -> "UNMAP_ACK";
            default -> "unknown type " + type;
        };
    }
}
