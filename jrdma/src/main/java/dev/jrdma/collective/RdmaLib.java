package dev.jrdma.collective;

import dev.jrdma.ConnectionState;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * rdma_lib's C API, call for call, for code being ported from it: {@code rdma_init} is
 * {@link #init}, {@code rdma_connect_peer} {@link #connectPeer}, {@code rdma_accept_peer}
 * {@link #acceptPeer}, {@code rdma_disconnect_peer} {@link #disconnectPeer}, {@code rdma_send} /
 * {@code rdma_recv} {@link #send} / {@link #recv} by peer index, {@code rdma_broadcast}
 * {@link #broadcast}, {@code rdma_sequential_alltoall} {@link #sequentialAllToAll},
 * {@code rdma_get_error} {@link #lastError}, {@code rdma_cleanup} {@link #cleanup}. Like the C
 * functions, these return a count or index, or -1 with the reason in {@link #lastError()}; they
 * block, and peers are numbered in the order they were connected or accepted.
 *
 * <p>{@link #MAX_PEERS} and {@link #BUFFER_SIZE} are rdma_lib's constants, as defaults: the
 * buffer size is {@code init}'s argument, the peer limit an argument of the longer {@code init}.
 *
 * <p>One difference: rdma_lib's all-to-all joins the messages as text ({@code "a; b; c;"}). Here
 * the combined message is binary: the server's message, then each peer's in peer order, each
 * {@code msgSize} bytes. New code should use {@link PeerGroup}, whose collectives use RDMA WRITE
 * and any member as root.
 */
public final class RdmaLib implements AutoCloseable {
    /** rdma_lib's MAX_PEERS: the default limit of peers of one context. */
    public static final int MAX_PEERS = 64;
    /** rdma_lib's BUFFER_SIZE: the default size of the registered communication buffer. */
    public static final int BUFFER_SIZE = 4096;
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static volatile String lastError = "";

    private final Rdma rdma;
    private final boolean ownsRdma, isServer;
    private final InetSocketAddress address;
    private final int bufferSize, maxPeers;
    private final LocalRegion buffer;
    private final List<Connection> peers = new ArrayList<>();
    private final LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
    /** Per peer, a receive asked for by a recv that gave up (time-out): the next recv takes it, so no message is lost. */
    private final java.util.Map<Integer, java.util.concurrent.CompletableFuture<Message>> pending = new java.util.concurrent.ConcurrentHashMap<>();
    private RdmaServer server;

    private RdmaLib(Rdma rdma, boolean ownsRdma, String ip, int port, int bufferSize, boolean isServer, int maxPeers) {
        this.rdma = rdma;
        this.ownsRdma = ownsRdma;
        this.address = new InetSocketAddress(ip, port);
        this.bufferSize = bufferSize;
        this.isServer = isServer;
        this.maxPeers = maxPeers;
        this.buffer = rdma.allocate(bufferSize);
    }

    /**
     * {@code rdma_init}: a context on the default provider ({@code auto}) with a registered
     * buffer of {@code bufSize} bytes (the largest message); a server context listens on
     * {@code ip:port} from now on. Null, with {@link #lastError()}, when that fails.
     *
     * @param ip the address: the server's to listen on, or the server to connect to
     * @param port the port
     * @param bufSize the largest message, in bytes
     * @param isServer whether this process is the server
     * @return the library, connected: a server once its peers came, a client once it reached the server
     */
    public static RdmaLib init(String ip, int port, int bufSize, boolean isServer) {
        Rdma rdma;
        try {
            rdma = Rdma.builder().build();
        } catch (RuntimeException e) {
            return error(null, "Failed to open an RDMA device or provider: " + e.getMessage());
        }
        RdmaLib l = init(rdma, true, ip, port, bufSize, isServer, MAX_PEERS);
        if (l == null) {
            rdma.close();
        }
        return l;
    }

    /**
     * {@code rdma_init} on a given {@code Rdma} (not closed by {@link #cleanup()}), with a peer limit of one's own.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param ip the address: the server's to listen on, or the server to connect to
     * @param port the port
     * @param bufSize the largest message, in bytes
     * @param isServer whether this process is the server
     * @param maxPeers the most peers (rdma_lib's MAX_PEERS)
     * @return the library, connected: a server once its peers came, a client once it reached the server
     */
    public static RdmaLib init(Rdma rdma, String ip, int port, int bufSize, boolean isServer, int maxPeers) {
        return init(rdma, false, ip, port, bufSize, isServer, maxPeers);
    }

    private static RdmaLib init(Rdma rdma, boolean owns, String ip, int port, int bufSize, boolean isServer, int maxPeers) {
        if (rdma == null || ip == null) {
            return error(null, "Invalid parameters: rdma and ip are needed");
        }
        if (bufSize <= 0 || maxPeers <= 0) {
            return error(null, "Invalid parameters: buffer size " + bufSize + " and peer limit " + maxPeers + " must be positive");
        }
        RdmaLib l;
        try {
            l = new RdmaLib(rdma, owns, ip, port, bufSize, isServer, maxPeers);
        } catch (RuntimeException e) {
            return error(null, "Failed to allocate the communication buffer: " + e.getMessage());
        }
        if (isServer) {
            try {
                l.server = rdma.listen(l.address, l.config(), l.accepted::add);
            } catch (RuntimeException e) {
                l.buffer.close();
                return error(null, "Failed to listen on " + ip + ":" + port + ": " + e.getMessage());
            }
        }
        return l;
    }

    private static <T> T error(T value, String why) {
        lastError = why;
        return value;
    }

    private static int fail(String why) {
        lastError = why;
        return -1;
    }

    /**
     * {@code rdma_get_error}: what the last call that returned -1 or null went wrong with (all contexts, as in C).
     *
     * @return the text of the last error on this thread, as rdma_lib's {@code rdma_last_error}; empty when none
     */
    public static String lastError() {
        return lastError;
    }

    private ConnectionConfig config() {
        return ConnectionConfig.builder().receiveBufferSize(bufferSize).build();
    }

    /**
     * {@code rdma_connect_peer}: the new peer's index, or -1.
     *
     * @param peerIp the peer's address
     * @param peerPort the peer's port
     * @return the new peer's index, or -1 on failure ({@link #lastError()} says why)
     */
    public synchronized int connectPeer(String peerIp, int peerPort) {
        if (peers.size() >= maxPeers) {
            return fail("Maximum number of peers reached (" + maxPeers + ")");
        }
        try {
            Connection c = rdma.connect(new InetSocketAddress(peerIp, peerPort), config());
            peers.add(c);
            return peers.size() - 1;
        } catch (RuntimeException e) {
            return fail("Failed to connect to " + peerIp + ":" + peerPort + ": " + e.getMessage());
        }
    }

    /**
     * {@code rdma_accept_peer} (server contexts): waits for the next peer (at most 60 s); its index, or -1.
     *
     * @return the new peer's index, or -1 on failure ({@link #lastError()} says why)
     */
    public synchronized int acceptPeer() {
        if (!isServer) {
            return fail("Not a server context");
        }
        if (peers.size() >= maxPeers) {
            return fail("Maximum number of peers reached (" + maxPeers + ")");
        }
        try {
            Connection c = accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            if (c == null) {
                return fail("No peer connected to " + address + " within " + WAIT.toSeconds() + " s");
            }
            peers.add(c);
            return peers.size() - 1;
        } catch (RuntimeException e) {
            return fail("Failed to accept on " + address + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("Interrupted while accepting on " + address);
        }
    }

    /**
     * {@code rdma_disconnect_peer}: 0, or -1 for an index that is not a peer. Indexes of the others do not move.
     *
     * @param peerIdx the peer's index, as rdma_lib numbers peers
     * @return 0, or -1 on failure ({@link #lastError()} says why)
     */
    public synchronized int disconnectPeer(int peerIdx) {
        Connection c = peer(peerIdx);
        if (c == null) {
            return -1;
        }
        c.close();
        return 0;
    }

    private Connection peer(int peerIdx) {
        if (peerIdx < 0 || peerIdx >= peers.size()) {
            fail("Invalid peer index " + peerIdx + " (" + peers.size() + " peers)");
            return null;
        }
        Connection c = peers.get(peerIdx);
        if (c.state() != ConnectionState.ESTABLISHED) {
            fail("Peer " + peerIdx + " not connected (" + c.state() + ")");
            return null;
        }
        return c;
    }

    /**
     * {@code rdma_send}: sends {@code len} bytes of {@code data} to peer {@code peerIdx}; {@code len}, or -1.
     *
     * @param peerIdx the peer's index, as rdma_lib numbers peers
     * @param data the bytes to send
     * @param len how many bytes of {@code data}
     * @return the bytes sent, or -1 on failure ({@link #lastError()} says why)
     */
    public synchronized int send(int peerIdx, byte[] data, int len) {
        Connection c = peer(peerIdx);
        if (c == null) {
            return -1;
        }
        if (data == null || len < 0 || len > data.length) {
            return fail("Invalid parameters: " + len + " bytes of a " + (data == null ? "null" : data.length + "-byte") + " array");
        }
        if (len > bufferSize) {
            return fail("A message of " + len + " bytes does not fit the buffer of " + bufferSize + " bytes");
        }
        MemorySegment.copy(data, 0, buffer.segment(), ValueLayout.JAVA_BYTE, 0, len);
        try {
            c.sendSync(buffer.slice(0, Math.max(1, len)));
            return len;
        } catch (RuntimeException e) {
            return fail("Failed to send to peer " + peerIdx + ": " + e.getMessage());
        }
    }

    /**
     * {@code rdma_recv}: the next message from peer {@code peerIdx}, at most {@code maxLen} bytes
     * of it into {@code data}; how many bytes that was (rdma_lib returns {@code maxLen} whatever
     * came), or -1.
     *
     * @param peerIdx the peer's index, as rdma_lib numbers peers
     * @param data where the message goes
     * @param maxLen the most bytes to take
     * @return the bytes received, or -1 on failure ({@link #lastError()} says why)
     */
    public int recv(int peerIdx, byte[] data, int maxLen) {
        Connection c;
        synchronized (this) {
            c = peer(peerIdx);
        }
        if (c == null) {
            return -1;
        }
        if (data == null || maxLen < 0 || maxLen > data.length) {
            return fail("Invalid parameters: " + maxLen + " bytes into a " + (data == null ? "null" : data.length + "-byte") + " array");
        }
        java.util.concurrent.CompletableFuture<Message> next = pending.remove(peerIdx);
        if (next == null) {
            next = c.receive();
        }
        try (Message m = next.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            int n = (int) Math.min(maxLen, Math.min(m.byteCount(), m.data().byteSize()));   // a write-with-imm notice has no data
            MemorySegment.copy(m.data(), ValueLayout.JAVA_BYTE, 0, data, 0, n);
            return n;
        } catch (ExecutionException e) {
            return fail("Receive from peer " + peerIdx + " failed: " + e.getCause().getMessage());
        } catch (TimeoutException e) {
            pending.put(peerIdx, next);
            return fail("Nothing from peer " + peerIdx + " within " + WAIT.toSeconds() + " s");
        } catch (InterruptedException e) {
            pending.put(peerIdx, next);
            Thread.currentThread().interrupt();
            return fail("Interrupted while receiving from peer " + peerIdx);
        }
    }

    /**
     * {@code rdma_broadcast}: sends the message to every peer in index order; {@code len}, or -1 at the first failure.
     *
     * @param data the bytes to send
     * @param len how many bytes of {@code data}
     * @return 0, or -1 on failure ({@link #lastError()} says why)
     */
    public int broadcast(byte[] data, int len) {
        for (int i = 0; i < peerCount(); i++) {
            if (send(i, data, len) < 0) {
                return -1;
            }
        }
        return len;
    }

    /**
     * {@code rdma_sequential_alltoall}: the server receives {@code msgSize} bytes from each peer
     * in turn, puts its own message first and theirs after it, and sends the combined
     * {@code (peers + 1) * msgSize} bytes to each peer in turn; a client sends its message to
     * the server (peer 0) and receives the combined one. Every side ends with the combined
     * message in {@code recvBuf}. 0, or -1.
     *
     * @param sendBuf this member's blocks, one of {@code msgSize} bytes for each member in rank order
     * @param recvBuf where the blocks meant for this member arrive, in the same order
     * @param msgSize the bytes of one block
     * @return 0, or -1 on failure ({@link #lastError()} says why)
     */
    public int sequentialAllToAll(byte[] sendBuf, byte[] recvBuf, int msgSize) {
        int n = peerCount();
        if (sendBuf == null || recvBuf == null || msgSize <= 0 || msgSize > sendBuf.length || n == 0) {
            return fail("Invalid parameters");
        }
        int total = isServer ? (n + 1) * msgSize : recvBuf.length;
        if (isServer && (total > bufferSize || total > recvBuf.length)) {
            return fail("The combined message of " + total + " bytes does not fit the buffer of " + bufferSize
                    + " bytes or recvBuf of " + recvBuf.length);
        }
        if (!isServer) {
            if (send(0, sendBuf, msgSize) < 0) {
                return -1;
            }
            return recv(0, recvBuf, recvBuf.length) < 0 ? -1 : 0;
        }
        byte[] combined = new byte[total];
        System.arraycopy(sendBuf, 0, combined, 0, msgSize);
        byte[] one = new byte[msgSize];
        for (int i = 0; i < n; i++) {
            int got = recv(i, one, msgSize);
            if (got < 0) {
                return -1;
            }
            System.arraycopy(one, 0, combined, (i + 1) * msgSize, got);
        }
        if (broadcast(combined, total) < 0) {
            return -1;
        }
        System.arraycopy(combined, 0, recvBuf, 0, total);
        return 0;
    }

    /** {@return how many peers were connected or accepted (disconnected ones keep their index)} */
    public synchronized int peerCount() {
        return peers.size();
    }

    /**
     * The connection of peer {@code peerIdx}, for what rdma_lib did not have (RDMA write, read, atomics).
     *
     * @param peerIdx the peer's index, as rdma_lib numbers peers
     * @return this connection
     */
    public synchronized Connection connection(int peerIdx) {
        return peerIdx >= 0 && peerIdx < peers.size() ? peers.get(peerIdx) : null;
    }

    /** {@code rdma_cleanup}: disconnects every peer, stops accepting and frees the buffer (and the Rdma {@link #init(String, int, int, boolean)} opened). */
    public synchronized void cleanup() {
        for (Connection c : peers) {
            c.close();
        }
        if (server != null) {
            server.close();
        }
        buffer.close();
        if (ownsRdma) {
            rdma.close();
        }
    }

    @Override
    public void close() {
        cleanup();
    }
}
