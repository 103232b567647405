package dev.jrdma.provider.tcp;

import dev.jrdma.spi.QueuePairSpec;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * The tcp provider's connection handshake, before any {@link TcpFrameDescriptor frame}:
 *
 * <pre>
 *  client                                   server
 *    | ---- HELLO  (spec, rendezvous, private data) -> |  onConnectRequest
 *    | <--- ACCEPT (spec, flags, private data) ------- |  or REJECT (private data), then close
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
 * rnr retry (u32 each), the host's boot id (16 bytes: a hint that the peer may share this host,
 * never a proof), a rendezvous name ({@link #NAME_BYTES} bytes, NUL-padded; HELLO: the client's
 * same-host rendezvous socket, empty for none), a nonce (16 bytes; HELLO: the one a server of this
 * host must present there), flags (u32; ACCEPT: {@link #SAME_HOST_OFFERED}, the server opened a
 * channel to the rendezvous and sent the nonce there, see {@link TcpSameHost}), the private data
 * length (u32) and the private data. A REJECT body is the private data alone. READY_TO_USE has
 * one byte: 1 when the client sent its ring on that channel; the server then maps it and sends
 * its own there before any frame, and the frames that follow go through the rings instead of
 * the socket. Version 3: no descriptor goes to a rendezvous before its owner sent its ring.
 * Every length is checked against {@link #MAX_PRIVATE_DATA} before anything is read.
 */
final class TcpHandshake {
    static final int HEADER_SIZE = 16;
    static final int MAGIC = 0x4D44524A;   // "JRDM" read little-endian
    static final byte VERSION = 3;
    static final byte HELLO = 1, ACCEPT = 2, REJECT = 3, READY_TO_USE = 4;
    /** The most private data a request or answer carries. */
    static final int MAX_PRIVATE_DATA = 4096;
    /** The longest rendezvous name. */
    static final int NAME_BYTES = 48;
    /** ACCEPT flag: the server opened a same-host channel and sent its ring on it. */
    static final int SAME_HOST_OFFERED = 1;
    private static final int FIXED = 5 * 4 + 16 + NAME_BYTES + 16 + 4 + 4;
    static final int MAX_BODY = FIXED + MAX_PRIVATE_DATA;

    /** A decoded HELLO or ACCEPT; {@code rendezvous} empty: none. */
    record Hello(QueuePairSpec spec, byte[] bootId, byte[] rendezvous, byte[] nonce, int flags, byte[] privateData) {
    }

    private TcpHandshake() {
    }

    static byte[] header(byte kind, int bodyLength) {
        return ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN).putInt(MAGIC).put(kind).put(VERSION)
                .putShort((short) 0).putInt(bodyLength).putInt(0).array();
    }

    static byte[] hello(byte kind, QueuePairSpec spec, byte[] bootId, byte[] privateData) {
        return hello(kind, spec, bootId, new byte[0], new byte[16], 0, privateData);
    }

    static byte[] hello(byte kind, QueuePairSpec spec, byte[] bootId, byte[] rendezvous, byte[] nonce, int flags,
                        byte[] privateData) {
        if (rendezvous.length > NAME_BYTES || nonce.length != 16) {
            throw new IllegalArgumentException("a rendezvous name of " + rendezvous.length + " bytes, a nonce of "
                    + nonce.length);
        }
        int body = FIXED + privateData.length;
        ByteBuffer b = ByteBuffer.allocate(HEADER_SIZE + body).order(ByteOrder.LITTLE_ENDIAN);
        b.put(header(kind, body));
        b.putInt(spec.sendDepth()).putInt(spec.recvDepth()).putInt(spec.responderResources())
                .putInt(spec.initiatorDepth()).putInt(spec.rnrRetry());
        b.put(bootId, 0, 16).put(rendezvous).put(new byte[NAME_BYTES - rendezvous.length]).put(nonce).putInt(flags);
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

    /**
     * A TCP connection as both its ends see it, {@code server} and {@code client} addresses from
     * the kernel (IPv4-mapped IPv6 as IPv4), hashed to 64 bits: what ties a same-host offer to
     * the connection whose HELLO asked for it.
     */
    static long binding(InetSocketAddress server, InetSocketAddress client) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            for (InetSocketAddress a : new InetSocketAddress[] {server, client}) {
                byte[] ip = a.getAddress().getAddress();
                if (ip.length == 16 && Arrays.equals(Arrays.copyOf(ip, 12), V4_MAPPED)) {
                    ip = Arrays.copyOfRange(ip, 12, 16);
                }
                d.update((byte) ip.length);
                d.update(ip);
                d.update((byte) (a.getPort() >> 8));
                d.update((byte) a.getPort());
            }
            return ByteBuffer.wrap(d.digest()).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    private static final byte[] V4_MAPPED = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff};

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
        byte[] name = new byte[NAME_BYTES];
        b.get(name);
        byte[] nonce = new byte[16];
        b.get(nonce);
        int flags = b.getInt();
        int nameLength = 0;
        while (nameLength < NAME_BYTES && name[nameLength] != 0) {
            byte c = name[nameLength];
            if (c < 0x21 || c > 0x7e) {
                throw new IllegalArgumentException("a rendezvous name with byte 0x" + Integer.toHexString(c & 0xff));
            }
            nameLength++;
        }
        for (int i = nameLength; i < NAME_BYTES; i++) {
            if (name[i] != 0) {
                throw new IllegalArgumentException("a rendezvous name with bytes after its end");
            }
        }
        if ((flags & ~SAME_HOST_OFFERED) != 0) {
            throw new IllegalArgumentException("unknown handshake flags 0x" + Integer.toHexString(flags));
        }
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("private data of " + n + " bytes in a body with " + b.remaining() + " left");
        }
        byte[] pd = new byte[n];
        b.get(pd);
        return new Hello(spec, boot, Arrays.copyOf(name, nameLength), nonce, flags, pd);
    }
}
