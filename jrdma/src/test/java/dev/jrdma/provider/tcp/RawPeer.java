package dev.jrdma.provider.tcp;

import dev.jrdma.spi.QueuePairSpec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * A peer that speaks the tcp provider's wire protocol from a plain socket, to lie, flood, stall
 * and vanish as a hostile peer would. Writes are bounded in time (a peer whose victim stops
 * reading sees its writes stop: that is the backpressure under test), reads too.
 */
final class RawPeer implements AutoCloseable {
    final SocketChannel channel;
    /** The server's ACCEPT: its queue pair spec and the private data it answered with. */
    TcpHandshake.Hello accepted;
    private long seq;
    private final ByteBuffer header = ByteBuffer.allocate(TcpFrameDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);

    private final Selector selector;

    private RawPeer(SocketChannel channel) throws IOException {
        this.channel = channel;
        channel.configureBlocking(false);
        this.selector = Selector.open();
    }

    /** Connects and completes the handshake as a peer of another host (socket framing, no rings). */
    static RawPeer connect(InetSocketAddress server) throws IOException {
        RawPeer p = open(server);
        p.handshake();
        return p;
    }

    /** The peer on a connection a raw server socket accepted (a server that speaks the wire itself). */
    static RawPeer accepted(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        return new RawPeer(ch);
    }

    /**
     * Connects from the local address {@code from} (another of 127.0.0.0/8: another source, as the
     * server counts them) and tries the handshake: the peer, or null when the server refused (its
     * reason in {@code refusal[0]}).
     */
    static RawPeer connectFrom(InetSocketAddress server, java.net.InetAddress from, String[] refusal) throws IOException {
        SocketChannel ch = SocketChannel.open();
        ch.bind(new InetSocketAddress(from, 0));
        ch.connect(server);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        RawPeer p = new RawPeer(ch);
        QueuePairSpec spec = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
        p.writeFully(ByteBuffer.wrap(TcpHandshake.hello(TcpHandshake.HELLO, spec, new byte[16], new byte[0])), 5_000);
        byte[] h = p.readFully(TcpHandshake.HEADER_SIZE, 5_000);
        byte kind = TcpHandshake.checkHeader(h);
        byte[] body = p.readFully(TcpHandshake.bodyLength(h), 5_000);
        if (kind != TcpHandshake.ACCEPT) {
            refusal[0] = body.length > 4 ? new String(body, 4, body.length - 4, java.nio.charset.StandardCharsets.UTF_8)
                    : "message " + kind;
            p.close();
            return null;
        }
        p.accepted = TcpHandshake.decodeHello(body);
        p.sendReadyToUse();
        return p;
    }

    /** Connects without a handshake. */
    static RawPeer open(InetSocketAddress server) throws IOException {
        SocketChannel ch = SocketChannel.open(server);   // connected while blocking, then non-blocking
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        return new RawPeer(ch);
    }

    void handshake() throws IOException {
        sendHelloAndAwaitAccept();
        sendReadyToUse();
    }

    /** The handshake's last message (after {@link #sendHelloAndAwaitAccept}). */
    void sendReadyToUse() throws IOException {
        writeFully(ByteBuffer.wrap(TcpHandshake.readyToUse(false)), 5_000);
    }

    /** The handshake up to the server's ACCEPT, without the READY_TO_USE that ends it. */
    void sendHelloAndAwaitAccept() throws IOException {
        QueuePairSpec spec = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
        writeFully(ByteBuffer.wrap(TcpHandshake.hello(TcpHandshake.HELLO, spec, new byte[16], new byte[0])), 5_000);
        byte[] h = readFully(TcpHandshake.HEADER_SIZE, 5_000);
        if (TcpHandshake.checkHeader(h) != TcpHandshake.ACCEPT) {
            throw new IOException("the server did not accept: message " + h[4]);
        }
        accepted = TcpHandshake.decodeHello(readFully(TcpHandshake.bodyLength(h), 5_000));
    }

    /** The API-level private data the server answered with (after jrdma's own header). */
    byte[] serverData() {
        byte[] pd = accepted.privateData();
        int tokenLength = Byte.toUnsignedInt(pd[10]);
        int dataLength = Byte.toUnsignedInt(pd[11]);
        return Arrays.copyOfRange(pd, 12 + tokenLength, 12 + tokenLength + dataLength);
    }

    /** A request frame with the next sequence number. */
    ByteBuffer request(byte type, int flags, int length, long addr, int rkey, int imm, long compareAdd, long swap) {
        return frame(type, flags, length, ++seq, addr, rkey, imm, compareAdd, swap);
    }

    ByteBuffer frame(byte type, int flags, int length, long sequence, long addr, int rkey, int imm, long compareAdd,
                     long swap) {
        header.clear();
        TcpFrameDescriptor.write(java.lang.foreign.MemorySegment.ofBuffer(header), 0, type, flags, 0, length, sequence,
                addr, rkey, imm, compareAdd, swap);
        header.clear();
        return header;
    }

    /**
     * Writes all of {@code b} or as much as the victim takes within {@code millis}; true when all
     * went. Waits for room in a selector, not spinning: the attacker must not take the CPU that
     * the victim and the control connection share with it on a small machine.
     */
    boolean writeFully(ByteBuffer b, long millis) throws IOException {
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (b.hasRemaining()) {
            if (channel.write(b) == 0) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0 || !await(SelectionKey.OP_WRITE, left)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Waits up to {@code millis} for the channel to be ready for {@code op}. */
    private boolean await(int op, long millis) throws IOException {
        SelectionKey key = channel.register(selector, op);
        try {
            return selector.select(Math.max(1, millis)) > 0;
        } finally {
            key.cancel();
            selector.selectNow();   // deregisters the cancelled key
        }
    }

    /** Reads {@code n} bytes within {@code millis}, or throws (EOF or time-out). */
    byte[] readFully(int n, long millis) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (b.hasRemaining()) {
            int r = channel.read(b);
            if (r < 0) {
                throw new java.io.EOFException("the server closed the connection after " + b.position() + " of " + n
                        + " bytes");
            }
            if (r == 0) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0 || !await(SelectionKey.OP_READ, left)) {
                    throw new java.net.SocketTimeoutException("no " + n + " bytes in " + millis + " ms");
                }
            }
        }
        return b.array();
    }

    /**
     * Reads frames (skipping payloads) until one of {@code type} arrives, the server closes, or
     * {@code millis} pass; the frame's header, or null when the server closed.
     */
    ByteBuffer awaitFrame(byte type, long millis) throws IOException {
        long deadline = System.nanoTime() + millis * 1_000_000;
        try {
            while (true) {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                ByteBuffer h = ByteBuffer.wrap(readFully(TcpFrameDescriptor.HEADER_SIZE, left)).order(ByteOrder.LITTLE_ENDIAN);
                if (h.get(0) == type) {
                    return h;
                }
                int length = h.getInt(4);
                if (length > 0) {
                    readFully(length, Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                }
            }
        } catch (java.io.EOFException | java.net.SocketException e) {
            return null;
        }
    }

    /** Whether the server closed the connection within {@code millis} (reading and dropping what comes). */
    boolean closedWithin(long millis) throws IOException {
        long deadline = System.nanoTime() + millis * 1_000_000;
        ByteBuffer sink = ByteBuffer.allocate(64 * 1024);
        while (System.nanoTime() < deadline) {
            sink.clear();
            int r;
            try {
                r = channel.read(sink);
            } catch (java.net.SocketException e) {
                return true;   // reset
            }
            if (r < 0) {
                return true;
            }
            if (r == 0) {
                await(SelectionKey.OP_READ, Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            }
        }
        return false;
    }

    @Override
    public void close() throws IOException {
        selector.close();
        channel.close();
    }
}
