package dev.jrdma.provider.tcp;

import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.function.Consumer;

/**
 * One connection as the tcp connection manager sees it: a socket going through the
 * {@link TcpHandshake}, then owned by its {@link TcpQueuePair}. The handshake steps run on the
 * manager's thread; {@link #disconnect} and {@link #close} may come from any thread.
 */
final class TcpCmEndpoint implements CmEndpoint, TcpQueuePair.Events {
    enum Phase { CONNECTING, HELLO_SENT, AWAITING_HELLO, REQUESTED, ACCEPT_SENT, ESTABLISHED, DONE }

    final int fd;
    private final TcpConnectionManager manager;
    final TcpCmListener listener;   // the listener it came in on; null for outgoing
    private final InetSocketAddress remote;
    private InetSocketAddress local;
    volatile Phase phase;
    final long deadlineNanos;
    private final int qpNum;

    // outgoing: what connect() was given
    private TcpCompletionQueue cq;
    private QueuePairSpec spec;
    private byte[] privateData;
    private Consumer<QueuePair> onQueuePair;

    private TcpQueuePair qp;
    private Object attachment;
    private TcpHandshake.Hello peerHello;

    // the message being read: header, then body
    private final byte[] header = new byte[TcpHandshake.HEADER_SIZE];
    private byte[] body;
    private int got;
    private byte[] out;   // handshake bytes the socket has not taken yet
    private int outAt;
    private boolean disconnectReported;
    private boolean ringMapped;   // server: the client's ring is mapped here
    private boolean usingRings;   // both agreed: frames go through the rings
    private boolean closed;
    /** An accepted connection counted against the manager's pending handshakes; guarded by the manager. */
    boolean countsAsPending;

    TcpCmEndpoint(TcpConnectionManager manager, int fd, TcpCmListener listener, InetSocketAddress remote, Phase phase,
                  long deadlineNanos, int qpNum) {
        this.manager = manager;
        this.fd = fd;
        this.listener = listener;
        this.remote = remote;
        this.phase = phase;
        this.deadlineNanos = deadlineNanos;
        this.qpNum = qpNum;
    }

    void outgoing(TcpCompletionQueue cq, QueuePairSpec spec, byte[] privateData, Consumer<QueuePair> onQueuePair) {
        this.cq = cq;
        this.spec = spec;
        this.privateData = privateData;
        this.onQueuePair = onQueuePair;
    }

    @Override
    public QueuePair queuePair() {
        return qp;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public InetSocketAddress localAddress() {
        if (local == null) {
            try {
                local = Sockets.localAddress(fd);
            } catch (RuntimeException e) {
                return null;
            }
        }
        return local;
    }

    TcpHandshake.Hello peerHello() {
        return peerHello;
    }

    // ---------------------------------------------------------------- the manager's thread

    /** The socket is ready for what this phase waits for. */
    void onReady(CmEventHandler handler) {
        try {
            if (out != null && !flushOut()) {
                return;
            }
            switch (phase) {
                case CONNECTING -> {
                    int err = Sockets.pendingError(fd);
                    if (err == Errno.EINPROGRESS || err == Errno.EALREADY) {
                        return;
                    }
                    if (err != 0) {
                        fail(handler, err);
                        return;
                    }
                    qp = new TcpQueuePair(fd, qpNum, manager.registrations(), cq, spec, this, manager.sameHost());
                    onQueuePair.accept(qp);
                    phase = Phase.HELLO_SENT;
                    manager.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP);
                    long[] ring = qp.txRingLocation();
                    send(TcpHandshake.hello(TcpHandshake.HELLO, spec, manager.bootId(), manager.pid(),
                            ring == null ? 0 : (int) ring[0], ring == null ? 0 : ring[1], ring == null ? 0 : ring[2],
                            privateData));
                }
                case HELLO_SENT -> {
                    byte kind = readMessage();
                    if (kind == 0) {
                        return;
                    }
                    if (kind == TcpHandshake.REJECT) {
                        phase = Phase.DONE;
                        manager.forget(fd);
                        handler.onRejected(this, 0, lastBody);
                    } else if (kind == TcpHandshake.ACCEPT) {
                        peerHello = TcpHandshake.decodeHello(lastBody);
                        // The server mapped our ring and offers its own: map it, and say whether both are in use.
                        boolean rings = sameHost() && peerHello.ringSize() > 0
                                && qp.mapPeerRing(peerHello.pid(), peerHello.ringFd(), peerHello.ringOffset(),
                                        peerHello.ringSize());
                        usingRings = rings;
                        send(TcpHandshake.readyToUse(rings));
                        // Frames may follow at once: READY_TO_USE must be out before them.
                        for (long until = System.nanoTime() + 1_000_000_000L; out != null && !flushOut(); ) {
                            if (System.nanoTime() > until) {
                                throw new IllegalArgumentException("could not send READY_TO_USE for a second");
                            }
                            Thread.onSpinWait();
                        }
                        established(handler, peerHello.privateData());
                    } else {
                        throw new IllegalArgumentException("expected ACCEPT or REJECT, got message " + kind);
                    }
                }
                case AWAITING_HELLO -> {
                    byte kind = readMessage();
                    if (kind == 0) {
                        return;
                    }
                    if (kind != TcpHandshake.HELLO) {
                        throw new IllegalArgumentException("expected HELLO, got message " + kind);
                    }
                    peerHello = TcpHandshake.decodeHello(lastBody);
                    phase = Phase.REQUESTED;
                    manager.watch(fd, 0);   // nothing more is read until accepted
                    handler.onConnectRequest(listener, this, peerHello.privateData());
                }
                case ACCEPT_SENT -> {
                    byte kind = readMessage();
                    if (kind == 0) {
                        return;
                    }
                    if (kind != TcpHandshake.READY_TO_USE) {
                        throw new IllegalArgumentException("expected READY_TO_USE, got message " + kind);
                    }
                    usingRings = lastBody.length == 1 && lastBody[0] == 1 && ringMapped;
                    established(handler, new byte[0]);
                }
                default -> {
                }
            }
        } catch (IllegalArgumentException e) {
            protocolError(handler, e.getMessage());
        } catch (PeerClosed e) {
            Phase p = phase;
            phase = Phase.DONE;
            manager.forget(fd);
            if (p == Phase.HELLO_SENT || p == Phase.CONNECTING) {
                handler.onRejected(this, Errno.ECONNRESET, new byte[0]);
            } else {
                if (p == Phase.ACCEPT_SENT) {
                    handler.onError(this, "the peer closed the connection during the handshake", Errno.ECONNRESET);
                } else {
                    close();
                }
            }
        }
    }

    /** Whether the peer runs on this host, this boot (its boot id is ours, and ours is known). */
    private boolean sameHost() {
        byte[] ours = manager.bootId();
        return manager.sameHost() != null && peerHello != null && java.util.Arrays.equals(ours, peerHello.bootId())
                && !java.util.Arrays.equals(ours, new byte[16]);
    }

    private void established(CmEventHandler handler, byte[] peerPrivateData) {
        phase = Phase.ESTABLISHED;
        manager.forget(fd);
        qp.start(manager.sameHost(), sameHost(), peerHello == null ? -1 : peerHello.pid(), usingRings);
        handler.onEstablished(this, peerPrivateData);
    }

    private void fail(CmEventHandler handler, int errno) {
        phase = Phase.DONE;
        manager.forget(fd);
        if (errno == Errno.ECONNREFUSED) {
            handler.onRejected(this, errno, new byte[0]);
        } else {
            handler.onError(this, "connect: " + Errno.name(errno) + " (" + Errno.describe(errno) + ")", errno);
        }
    }

    private void protocolError(CmEventHandler handler, String what) {
        Phase p = phase;
        phase = Phase.DONE;
        manager.forget(fd);
        if (listener == null && p != Phase.ESTABLISHED) {
            handler.onError(this, "handshake with " + remote + " failed: " + what, Errno.EPROTO);
        } else {
            System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING,
                    "tcp: dropped a connection from {0}: {1}", remote, what);
            close();
        }
    }

    /** The connect did not finish in time. */
    void timedOut(CmEventHandler handler) {
        if (phase == Phase.CONNECTING || phase == Phase.HELLO_SENT) {
            phase = Phase.DONE;
            manager.forget(fd);
            handler.onError(this, "connecting to " + remote + " timed out", Errno.ETIMEDOUT);
        } else if (phase == Phase.AWAITING_HELLO || phase == Phase.ACCEPT_SENT) {
            Phase p = phase;
            phase = Phase.DONE;
            manager.forget(fd);
            if (p == Phase.ACCEPT_SENT) {
                handler.onError(this, "the peer did not finish the handshake", Errno.ETIMEDOUT);
            } else {
                close();
            }
        }
    }

    /** Delivers the disconnect of an established endpoint once. */
    void reportDisconnect(CmEventHandler handler) {
        if (!disconnectReported && !closed) {
            disconnectReported = true;
            handler.onDisconnected(this);
        }
    }

    private static final class PeerClosed extends RuntimeException {
        PeerClosed() {
            super(null, null, false, false);
        }
    }

    /** Reads the next handshake message; its kind when whole (body in {@link #body}), 0 for "not yet". */
    private byte readMessage() {
        if (body == null) {
            got += read(header, got, TcpHandshake.HEADER_SIZE - got);
            if (got < TcpHandshake.HEADER_SIZE) {
                return 0;
            }
            TcpHandshake.checkHeader(header);
            body = new byte[TcpHandshake.bodyLength(header)];
            got = 0;
        }
        got += read(body, got, body.length - got);
        if (got < body.length) {
            return 0;
        }
        byte kind = header[4];
        got = 0;
        lastBody = body;
        body = null;
        return kind;
    }

    private byte[] lastBody;

    private int read(byte[] into, int at, int n) {
        if (n == 0) {
            return 0;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(n);
            long r = Sockets.recv(fd, buf.address(), n);
            if (r == 0) {
                throw new PeerClosed();
            }
            if (r < 0) {
                int errno = (int) -r;
                if (errno == Errno.EAGAIN || errno == Errno.EINTR) {
                    return 0;
                }
                throw new PeerClosed();
            }
            MemorySegment.copy(buf, ValueLayout.JAVA_BYTE, 0, into, at, (int) r);
            return (int) r;
        }
    }

    private void send(byte[] message) {
        out = message;
        outAt = 0;
        if (!flushOut()) {
            manager.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLOUT | Sockets.EPOLLRDHUP);
        }
    }

    /** Sends what is left of {@link #out}; true when all of it went. */
    private boolean flushOut() {
        try (Arena a = Arena.ofConfined()) {
            int n = out.length - outAt;
            MemorySegment buf = a.allocate(n);
            MemorySegment.copy(out, outAt, buf, ValueLayout.JAVA_BYTE, 0, n);
            MemorySegment iov = a.allocate(Sockets.IOVEC_SIZE, 8);
            MemorySegment msg = a.allocate(Sockets.MSGHDR_SIZE, 8);
            Sockets.iovec(iov, 0, buf.address(), n);
            Sockets.setIov(msg, iov.address(), 1);
            long sent = Sockets.sendmsg(fd, msg.address());
            if (sent < 0) {
                int errno = (int) -sent;
                if (errno == Errno.EAGAIN || errno == Errno.EINTR) {
                    return false;
                }
                throw new PeerClosed();
            }
            outAt += (int) sent;
            if (outAt == out.length) {
                out = null;
                return true;
            }
            return false;
        }
    }

    // ---------------------------------------------------------------- CmEndpoint

    @Override
    public void accept(CompletionQueue completionQueue, QueuePairSpec qpSpec, byte[] answer,
                       Consumer<QueuePair> onQp) {
        if (phase != Phase.REQUESTED) {
            throw new IllegalStateException("accept: the request is " + phase);
        }
        qp = new TcpQueuePair(fd, qpNum, manager.registrations(), (TcpCompletionQueue) completionQueue, qpSpec, this,
                manager.sameHost());
        onQp.accept(qp);
        phase = Phase.ACCEPT_SENT;
        manager.track(this);
        manager.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP);
        // A client of this host offered its ring: map it, and offer ours only if that worked.
        ringMapped = sameHost() && peerHello.ringSize() > 0
                && qp.mapPeerRing(peerHello.pid(), peerHello.ringFd(), peerHello.ringOffset(), peerHello.ringSize());
        long[] ring = ringMapped ? qp.txRingLocation() : null;
        send(TcpHandshake.hello(TcpHandshake.ACCEPT, qpSpec, manager.bootId(), manager.pid(),
                ring == null ? 0 : (int) ring[0], ring == null ? 0 : ring[1], ring == null ? 0 : ring[2], answer));
    }

    @Override
    public void reject(byte[] answer) {
        if (phase != Phase.REQUESTED) {
            return;
        }
        phase = Phase.DONE;
        try {
            out = TcpHandshake.reject(answer);
            outAt = 0;
            flushOut();   // best effort: the socket is closed next
        } catch (RuntimeException ignored) {
            // the peer is gone already
        }
    }

    @Override
    public void disconnect() {
        TcpQueuePair q = qp;
        if (phase == Phase.ESTABLISHED && q != null) {
            q.sendDisconnect();
            manager.disconnected(this);
        }
    }

    @Override
    public void peerGone(String why) {
        manager.disconnected(this);
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    @Override
    public void attach(Object a) {
        attachment = a;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        phase = Phase.DONE;
        manager.forget(fd);
        if (qp != null) {
            qp.close();
        }
        Sockets.close(fd);
    }

    @Override
    public String toString() {
        return "tcp endpoint " + remote + " (" + phase + ")";
    }
}
