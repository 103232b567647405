package dev.jrdma.provider.tcp;

import dev.jrdma.spi.QueuePairSpec;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The tcp provider's connection handshake, before any {@link TcpFrameDescriptor frame}:
 *
 * <pre>
 *  client                                   server
 *    | ---- HELLO  (spec, host, pid, private data) --> |  onConnectRequest
 *    | <--- ACCEPT (spec, host, pid, private data) --- |  or REJECT (private data), then close
 *    | ---- READY_TO_USE -----------------------------> |  both established; frames follow
 * </pre>
 *
 * Each message: a 16-byte header, little-endian, then {@code bodyLength} bytes.
 *
 * <pre>
 *  0               4       5       6               8               12              16
 *  +---------------+-------+-------+---------------+---------------+---------------+
 *  | magic "JRDM"  | kind  |version|   reserved    |  bodyLength   |   reserved    |
 *  +---------------+-------+-------+---------------+---------------+---------------+
 * </pre>
 *
 * HELLO and ACCEPT bodies: send depth, receive depth, responder resources, initiator depth,
 * rnr retry (u32 each), the host's boot id (16 bytes: same host, same boot), the pid (u64),
 * the sender's stream ring for a same-host peer (fd u32, offset u64, size u64; size 0: none,
 * see {@link SharedByteRing}), the private data length (u32) and the private data. A REJECT
 * body is the private data alone. READY_TO_USE has one byte: 1 when both sides mapped the
 * other's ring, and the frames that follow go through the rings instead of the socket.
 * Every length is checked against {@link #MAX_PRIVATE_DATA} before anything is read.
 */
final class TcpHandshake {
    static final int HEADER_SIZE = 16;
    static final int MAGIC = 0x4D44524A;   // "JRDM" read little-endian
    static final byte VERSION = 1;
    static final byte HELLO = 1, ACCEPT = 2, REJECT = 3, READY_TO_USE = 4;
    /** The most private data a request or answer carries. */
    static final int MAX_PRIVATE_DATA = 4096;
    private static final int FIXED = 5 * 4 + 16 + 8 + 4 + 8 + 8 + 4;
    static final int MAX_BODY = FIXED + MAX_PRIVATE_DATA;

    /** A decoded HELLO or ACCEPT; {@code ringSize} 0: no ring offered. */
    record Hello(QueuePairSpec spec, byte[] bootId, long pid, int ringFd, long ringOffset, long ringSize,
                 byte[] privateData) {
    }

    private TcpHandshake() {
    }

    static byte[] header(byte kind, int bodyLength) {
        return ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN).putInt(MAGIC).put(kind).put(VERSION)
                .putShort((short) 0).putInt(bodyLength).putInt(0).array();
    }

    static byte[] hello(byte kind, QueuePairSpec spec, byte[] bootId, long pid, byte[] privateData) {
        return hello(kind, spec, bootId, pid, 0, 0, 0, privateData);
    }

    static byte[] hello(byte kind, QueuePairSpec spec, byte[] bootId, long pid, int ringFd, long ringOffset,
                        long ringSize, byte[] privateData) {
        int body = FIXED + privateData.length;
        ByteBuffer b = ByteBuffer.allocate(HEADER_SIZE + body).order(ByteOrder.LITTLE_ENDIAN);
        b.put(header(kind, body));
        b.putInt(spec.sendDepth()).putInt(spec.recvDepth()).putInt(spec.responderResources())
                .putInt(spec.initiatorDepth()).putInt(spec.rnrRetry());
        b.put(bootId, 0, 16).putLong(pid).putInt(ringFd).putLong(ringOffset).putLong(ringSize);
        b.putInt(privateData.length).put(privateData);
        return b.array();
    }

    /** READY_TO_USE, saying whether the frames that follow go through the rings. */
    static byte[] readyToUse(boolean rings) {
        return ByteBuffer.allocate(HEADER_SIZE + 1).order(ByteOrder.LITTLE_ENDIAN).put(header(READY_TO_USE, 1))
                .put((byte) (rings ? 1 : 0)).array();
    }

    static byte[] reject(byte[] privateData) {
        ByteBuffer b = ByteBuffer.allocate(HEADER_SIZE + privateData.length).order(ByteOrder.LITTLE_ENDIAN);
        return b.put(header(REJECT, privateData.length)).put(privateData).array();
    }

    /** The kind of a header, after checking magic, version and length; throws naming what is wrong. */
    static byte checkHeader(byte[] h) {
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        byte kind = b.get();
        byte version = b.get();
        if (magic != MAGIC) {
            throw new IllegalArgumentException("not a jrdma tcp peer (magic 0x" + Integer.toHexString(magic) + ")");
        }
        if (version != VERSION) {
            throw new IllegalArgumentException("handshake version " + version + ", this side speaks " + VERSION);
        }
        if (kind < HELLO || kind > READY_TO_USE) {
            throw new IllegalArgumentException("unknown handshake message " + kind);
        }
        int length = bodyLength(h);
        if (length < 0 || length > MAX_BODY) {
            throw new IllegalArgumentException("handshake body of " + length + " bytes (at most " + MAX_BODY + ")");
        }
        return kind;
    }

    static int bodyLength(byte[] h) {
        return ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN).getInt(8);
    }

    static Hello decodeHello(byte[] body) {
        ByteBuffer b = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        if (body.length < FIXED) {
            throw new IllegalArgumentException("a HELLO/ACCEPT of " + body.length + " bytes is truncated");
        }
        QueuePairSpec spec = new QueuePairSpec(b.getInt(), b.getInt(), 1, 1, 0, b.getInt(), b.getInt(), 7, 0);
        int rnr = b.getInt();
        spec = new QueuePairSpec(spec.sendDepth(), spec.recvDepth(), 1, 1, 0, spec.responderResources(),
                spec.initiatorDepth(), 7, rnr);
        byte[] boot = new byte[16];
        b.get(boot);
        long pid = b.getLong();
        int ringFd = b.getInt();
        long ringOffset = b.getLong();
        long ringSize = b.getLong();
        if (ringSize < 0 || ringOffset < 0 || ringFd < 0) {
            throw new IllegalArgumentException("a ring of " + ringSize + " bytes at " + ringOffset + " of fd " + ringFd);
        }
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("private data of " + n + " bytes in a body with " + b.remaining() + " left");
        }
        byte[] pd = new byte[n];
        b.get(pd);
        return new Hello(spec, boot, pid, ringFd, ringOffset, ringSize, pd);
    }
}
