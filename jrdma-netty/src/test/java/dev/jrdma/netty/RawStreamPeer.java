package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A stream peer written by hand on jrdma's plain API, with no channel code: it speaks
 * {@link StreamMessage}'s wire format directly, as Netty's "by peer" and "by self" tests use a
 * plain {@code java.net.Socket} (and {@code ServerSocket}, here {@link Server}) against the
 * transport under test.
 *
 * <p>Like a blocking socket it is used from one test thread. It keeps the stream's credit count
 * as the protocol asks: every message it received and {@link #read} took is given back with the
 * next message it sends, and it sends no more messages than the channel granted (data leaving
 * {@link ByteStream#RESERVED} of them for control messages, as the channel's own side does).
 * Credits the channel gives back are seen only when {@link #read} takes messages, so a peer that
 * never reads can send about the channel's receive queue depth of messages, which is plenty for
 * the tests. {@link #close} ends the connection without a {@link StreamMessage#CLOSE}: the channel
 * sees a reset.
 */
final class RawStreamPeer implements AutoCloseable {
    /** The longest a blocking step ({@link #read}, {@link Server#accept}) waits: a backstop, the tests' own limits are shorter. */
    private static final long WAIT_SECONDS = 60;

    /** Null for an accepted peer: its {@link Server} owns the instance. */
    private final Rdma ownRdma;
    private final Rdma rdma;
    private Connection connection;
    private LocalRegion buf;
    /** Messages the channel may still be sent (its receive buffers we have not used). */
    private int credits;
    /** Messages received and taken: given back with the next message sent. */
    private int owed;
    /** The DATA message being read, and how far. */
    private byte[] pending;
    private int pendingAt;
    /** The channel's output ended (its SHUTDOWN_OUTPUT or CLOSE was read). */
    private boolean eof;

    /** A client peer: it connects with {@link #connect}. */
    RawStreamPeer() {
        this.ownRdma = Rdma.builder().provider(JrdmaSocketTestPermutation.PROVIDER).build();
        this.rdma = ownRdma;
    }

    /** An accepted peer, on its server's instance. */
    private RawStreamPeer(Rdma rdma, Connection connection) {
        this.ownRdma = null;
        this.rdma = rdma;
        start(connection);
    }

    void connect(SocketAddress address) {
        start(rdma.connect((InetSocketAddress) address, JrdmaSocketChannelConfig.DEFAULT_CONNECTION_CONFIG));
    }

    private void start(Connection c) {
        connection = c;
        credits = c.peerReceiveQueueDepth();
        buf = rdma.allocate(Math.max(1, Math.min(ByteStream.MAX_MESSAGE, c.peerReceiveBufferSize())));
    }

    /** One byte of DATA. */
    void write(int data) {
        write(new byte[] {(byte) data});
    }

    /** {@code data} as one DATA message (1 up to the channel's receive buffer size). */
    void write(byte[] data) {
        if (data.length == 0 || data.length > buf.length()) {
            throw new IllegalArgumentException("a DATA message carries 1 to " + buf.length() + " bytes, not " + data.length);
        }
        if (credits <= ByteStream.RESERVED) {
            throw new IllegalStateException("no credit left for DATA (" + credits + "): the peer reads too little to see the channel's");
        }
        MemorySegment.copy(data, 0, buf.segment(), ValueLayout.JAVA_BYTE, 0, data.length);
        send(StreamMessage.DATA, buf.slice(0, data.length));
    }

    /** TCP's FIN: the channel reads the end of its input. */
    void shutdownOutput() {
        send(StreamMessage.SHUTDOWN_OUTPUT, buf.slice(0, 0));
    }

    private void send(int kind, LocalRegion message) {
        if (credits <= 0) {
            throw new IllegalStateException("no credit left for " + StreamMessage.name(kind));
        }
        credits--;
        int imm = StreamMessage.imm(kind, owed);
        owed = 0;
        connection.sendWithImmSync(imm, message);
    }

    /**
     * The next byte the channel wrote, as {@code InputStream.read()}: waits for it, and returns -1
     * once the channel's output ended (its SHUTDOWN_OUTPUT, or CLOSE, came after its last data).
     *
     * @throws IOException when the connection ended without either (a reset), or nothing came in time
     */
    int read() throws IOException {
        while (pending == null || pendingAt == pending.length) {
            if (eof) {
                return -1;
            }
            receiveOne();
        }
        return pending[pendingAt++] & 0xff;
    }

    private void receiveOne() throws IOException {
        Message m;
        try {
            m = connection.receive().get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading", e);
        } catch (ExecutionException e) {
            throw new IOException("Connection reset: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IOException("nothing came from the channel in " + WAIT_SECONDS + " s", e);
        }
        try (m) {
            if (!m.hasImm() || m.isWrite()) {
                throw new IOException("not a stream message: " + (m.isWrite() ? "a WRITE_WITH_IMM" : "a SEND without an immediate value"));
            }
            int imm = m.immValue();
            int kind = StreamMessage.kind(imm);
            credits += StreamMessage.credits(imm);
            owed++;
            switch (kind) {
                case StreamMessage.DATA -> {
                    if (eof || m.byteCount() == 0) {
                        throw new IOException(eof ? "DATA after the end of the channel's output" : "an empty DATA message");
                    }
                    pending = new byte[m.byteCount()];
                    MemorySegment.copy(m.data(), ValueLayout.JAVA_BYTE, 0, pending, 0, pending.length);
                    pendingAt = 0;
                }
                case StreamMessage.CREDIT -> {
                    // only its credits
                }
                case StreamMessage.SHUTDOWN_OUTPUT, StreamMessage.CLOSE -> {
                    if (eof) {
                        throw new IOException(StreamMessage.name(kind) + " after the end of the channel's output");
                    }
                    eof = true;
                }
                default -> throw new IOException("a message of " + StreamMessage.name(kind));
            }
        }
    }

    @Override
    public void close() {
        if (buf != null) {
            buf.close();
            buf = null;
        }
        if (connection != null) {
            connection.close();
        }
        if (ownRdma != null) {
            ownRdma.close();
        }
    }

    /** {@link #listen}: a listener accepting {@link RawStreamPeer}s, as a {@code java.net.ServerSocket}. */
    static Server listen(SocketAddress address) {
        return new Server(address);
    }

    static final class Server implements AutoCloseable {
        private final Rdma rdma = Rdma.builder().provider(JrdmaSocketTestPermutation.PROVIDER).build();
        private final BlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
        private final RdmaServer server;

        private Server(SocketAddress address) {
            RdmaServer s;
            try {
                s = rdma.listen((InetSocketAddress) address, JrdmaSocketChannelConfig.DEFAULT_CONNECTION_CONFIG, accepted::add);
            } catch (RuntimeException e) {
                rdma.close();
                throw e;
            }
            this.server = s;
        }

        /** {@return the address it listens on, with its port} */
        InetSocketAddress address() {
            return server.address();
        }

        /** The next connection accepted (waiting for it), as a peer on this listener's instance. */
        RawStreamPeer accept() throws IOException {
            Connection c;
            try {
                c = accepted.poll(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while accepting", e);
            }
            if (c == null) {
                throw new IOException("no connection came to " + address() + " in " + WAIT_SECONDS + " s");
            }
            return new RawStreamPeer(rdma, c);
        }

        /** Stops listening and ends every connection it accepted. */
        @Override
        public void close() {
            try {
                server.close();
            } finally {
                rdma.close();
            }
        }
    }
}
