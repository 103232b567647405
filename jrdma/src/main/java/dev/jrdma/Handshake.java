package dev.jrdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * jrdma's own bytes in rdma_cm's private data: what the peer needs to know before the first
 * operation, so that errors can be caught on the sending side. Optional: a C peer that sends
 * none (or other bytes) is a peer of unknown limits, and nothing here ever goes on the data path.
 *
 * <pre>
 *  0      4                     8                   10         11         12
 *  | JRD1 | receive buffer size | receive depth (u16) | token len | data len | token | data
 * </pre>
 * A rejection carries {@code JRDX} and a UTF-8 reason.
 */
record Handshake(int receiveBufferSize, int receiveDepth, byte[] token, byte[] data) {
    private static final int MAGIC = 0x4A524431;   // "JRD1"
    private static final int REJECT_MAGIC = 0x4A524458;   // "JRDX"
    /** A peer that sent no jrdma header. */
    static final Handshake UNKNOWN = new Handshake(-1, -1, new byte[0], new byte[0]);

    static Handshake of(ConnectionConfig config) {
        return new Handshake(config.receiveBufferSize(), config.receiveQueueDepth(), config.authTokenRef(),
                config.privateDataRef());
    }

    boolean known() {
        return receiveBufferSize >= 0;
    }

    byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(ConnectionConfig.HEADER_BYTES + token.length + data.length)
                .order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).putInt(receiveBufferSize).putShort((short) Math.min(receiveDepth, 0xffff))
                .put((byte) token.length).put((byte) data.length).put(token).put(data);
        return b.array();
    }

    /** What a peer sent; {@link #UNKNOWN} when it is not a jrdma header (rdma_cm pads with zeros). */
    static Handshake decode(byte[] bytes) {
        if (bytes.length < ConnectionConfig.HEADER_BYTES) {
            return UNKNOWN;
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        if (b.getInt() != MAGIC) {
            return UNKNOWN;
        }
        int size = b.getInt();
        int depth = Short.toUnsignedInt(b.getShort());
        int tokenLen = Byte.toUnsignedInt(b.get());
        int dataLen = Byte.toUnsignedInt(b.get());
        if (size < 0 || ConnectionConfig.HEADER_BYTES + tokenLen + dataLen > bytes.length) {
            return UNKNOWN;
        }
        byte[] token = Arrays.copyOfRange(bytes, 12, 12 + tokenLen);
        byte[] data = Arrays.copyOfRange(bytes, 12 + tokenLen, 12 + tokenLen + dataLen);
        return new Handshake(size, depth, token, data);
    }

    static byte[] rejection(String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + Math.min(text.length, 140)).order(ByteOrder.BIG_ENDIAN);
        b.putInt(REJECT_MAGIC).put(text, 0, Math.min(text.length, 140));
        return b.array();
    }

    /** The reason in a jrdma rejection, or null when the peer gave none we can read. */
    static String rejectionReason(byte[] bytes) {
        if (bytes.length < 4 || ByteBuffer.wrap(bytes).getInt() != REJECT_MAGIC) {
            return null;
        }
        int end = bytes.length;
        while (end > 4 && bytes[end - 1] == 0) {
            end--;
        }
        return new String(bytes, 4, end - 4, StandardCharsets.UTF_8);
    }
}
