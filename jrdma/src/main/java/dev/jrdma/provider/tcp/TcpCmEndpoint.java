package dev.jrdma.provider.tcp;

import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

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
    /**
     * When the peer's current step must be done: a server gives its client the handshake timeout
     * for its HELLO from the TCP accept, and again for its READY_TO_USE from our ACCEPT, so that
     * the time this side took (a busy IO thread, the application's decision) is not charged to it.
     */
    volatile long deadlineNanos;
    private final int qpNum;

    // outgoing: what connect() was given
    private TcpCompletionQueue cq;
    private QueuePairSpec spec;
    private byte[] privateData;
    private QueuePairOwner owner;

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
    private final byte[] nonce = new byte[16];   // client: what a server of this host presents at our rendezvous
    private boolean sameHostOffered;   // server: a channel to the client's rendezvous carries our ring
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

    void outgoing(TcpCompletionQueue cq, QueuePairSpec spec, byte[] privateData, QueuePairOwner owner) {
        this.cq = cq;
        this.spec = spec;
        this.privateData = privateData;
        this.owner = owner;
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
                case CONNECTING -> connected(handler);
                case HELLO_SENT -> answered(handler);
                case AWAITING_HELLO -> requested(handler);
                case ACCEPT_SENT -> readyToUse(handler);
                default -> {
                }
            }
        } catch (IllegalArgumentException e) {
            protocolError(handler, e.getMessage());
        } catch (PeerClosed e) {
            peerClosed(handler);
        }
    }

    /** Client: the connect finished (or failed); send HELLO. */
    private void connected(CmEventHandler handler) {
        int err = Sockets.pendingError(fd);
        if (err == Errno.EINPROGRESS || err == Errno.EALREADY) {
            return;
        }
        if (err != 0) {
            fail(handler, err);
            return;
        }
        qp = new TcpQueuePair(fd, qpNum, manager.registrations(), cq, spec, owner.postMonitor(), this, manager.sameHost(),
                sharedReceives(owner));
        owner.onQueuePair(qp);
        phase = Phase.HELLO_SENT;
        manager.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP);
        send(TcpHandshake.hello(TcpHandshake.HELLO, spec, manager.bootId(), rendezvous(), nonce, 0, privateData));
    }

    /** Client: the server's ACCEPT or REJECT; after an ACCEPT, READY_TO_USE and established. */
    private void answered(CmEventHandler handler) {
        byte kind = readMessage();
        if (kind == 0) {
            return;
        }
        if (kind == TcpHandshake.REJECT) {
            phase = Phase.DONE;
            manager.forget(fd);
            handler.onRejected(this, 0, lastBody);
            return;
        }
        if (kind != TcpHandshake.ACCEPT) {
            throw new IllegalArgumentException("expected ACCEPT or REJECT, got message " + kind);
        }
        peerHello = TcpHandshake.decodeHello(lastBody);
        usingRings = (peerHello.flags() & TcpHandshake.SAME_HOST_OFFERED) != 0 && sameHost() && joinSameHost();
        send(TcpHandshake.readyToUse(usingRings));
        // Frames may follow at once: READY_TO_USE must be out before them.
        for (long until = System.nanoTime() + 1_000_000_000L; out != null && !flushOut(); ) {
            if (System.nanoTime() > until) {
                throw new IllegalArgumentException("could not send READY_TO_USE for a second");
            }
            Thread.onSpinWait();
        }
        established(handler, peerHello.privateData());
    }

    /** Server: the client's HELLO; the application accepts or rejects it. */
    private void requested(CmEventHandler handler) {
        byte kind = readMessage();
        if (kind == 0) {
            return;
        }
        if (kind != TcpHandshake.HELLO) {
            throw new IllegalArgumentException("expected HELLO, got message " + kind);
        }
        peerHello = TcpHandshake.decodeHello(lastBody);
        phase = Phase.REQUESTED;
        // Past its HELLO a handshake no longer holds a pending place: the accept policy (auth
        // token, maxConnections, maxConnectionsPerSource) counts it from now on, as a connection,
        // and the handshake timeout ends it. So sockets that send a HELLO and never their
        // READY_TO_USE fill their own source's share, not every client's pending places.
        manager.helloRead(this);
        manager.watch(fd, 0);   // nothing more is read until accepted
        handler.onConnectRequest(listener, this, peerHello.privateData());
    }

    /** Server: the client's READY_TO_USE; with rings, the client's ring must be on the channel. */
    private void readyToUse(CmEventHandler handler) {
        byte kind = readMessage();
        if (kind == 0) {
            return;
        }
        if (kind != TcpHandshake.READY_TO_USE) {
            throw new IllegalArgumentException("expected READY_TO_USE, got message " + kind);
        }
        if (lastBody.length != 1 || (lastBody[0] & 0xff) > 1) {
            throw new IllegalArgumentException("a READY_TO_USE of " + lastBody.length + " bytes");
        }
        usingRings = lastBody[0] == 1;
        if (usingRings && !(sameHostOffered && qp.acceptPeerRing())) {
            throw new IllegalArgumentException(sameHostOffered
                    ? "READY_TO_USE says the rings are in use, and the client's ring was not handed over "
                            + "as a sealed memfd on the same-host channel"
                    : "READY_TO_USE says the rings are in use, and none was offered");
        }
        established(handler, new byte[0]);
    }

    /** The peer closed during the handshake: a refusal for a client, an error or a drop for a server. */
    private void peerClosed(CmEventHandler handler) {
        Phase p = phase;
        phase = Phase.DONE;
        manager.forget(fd);
        if (p == Phase.HELLO_SENT || p == Phase.CONNECTING) {
            handler.onRejected(this, Errno.ECONNRESET, new byte[0]);
        } else if (p == Phase.ACCEPT_SENT) {
            handler.onError(this, "the peer closed the connection during the handshake", Errno.ECONNRESET);
        } else {
            close();
        }
    }

    /**
     * Whether the peer may run on this host, this boot (its boot id is ours, and ours is known):
     * only a hint, worth the cost of trying the rendezvous; the proof is the channel.
     */
    private boolean sameHost() {
        byte[] ours = manager.bootId();
        return manager.sameHost() != null && peerHello != null && Arrays.equals(ours, peerHello.bootId())
                && !Arrays.equals(ours, new byte[16]);
    }

    /** Client: this side's rendezvous name for the HELLO, with a fresh nonce for it; empty when there is none. */
    private byte[] rendezvous() {
        TcpSameHost support = manager.sameHost();
        if (support == null) {
            return new byte[0];
        }
        try {
            byte[] name = support.rendezvousName();
            if (name.length > 0) {
                System.arraycopy(support.newNonce(), 0, nonce, 0, nonce.length);
                manager.watchSameHost();
            }
            return name;
        } catch (RuntimeException e) {
            Log.quietly(System.Logger.Level.WARNING, "shm: no rendezvous socket (" + e.getMessage()
                    + "): connections keep the tcp path", null);
            return new byte[0];
        }
    }

    /** Client, at an ACCEPT that offers a same-host link: take it by our nonce (see {@link SameHostLink#join}). */
    private boolean joinSameHost() {
        return qp.joinSameHost(nonce, binding(false));
    }

    /** This TCP connection as both ends see it: (server address, client address), from the kernel. */
    private long binding(boolean server) {
        try {
            InetSocketAddress ours = Sockets.localAddress(fd), theirs = Sockets.remoteAddress(fd);
            return server ? TcpHandshake.binding(ours, theirs) : TcpHandshake.binding(theirs, ours);
        } catch (RuntimeException e) {
            return 0;   // the socket's ends are unknown (it failed): no binding matches, so no rings
        }
    }

    private void established(CmEventHandler handler, byte[] peerPrivateData) {
        phase = Phase.ESTABLISHED;
        manager.forget(fd);
        qp.start(manager.sameHost(), usingRings, peerHello.spec(), manager.limits().idleTimeoutNanos());
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
                handler.onError(this, "the peer did not finish the handshake within the handshake timeout "
                        + "of " + TimeUnit.NANOSECONDS.toMillis(manager.limits().handshakeTimeoutNanos())
                        + " ms (Rdma.Builder.handshakeTimeout)", Errno.ETIMEDOUT);
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

    /** The owner's shared receive queue, when it has one; it must be this device's. */
    private TcpSharedReceiveQueue sharedReceives(QueuePairOwner owner) {
        Srq srq = owner.srq();
        if (srq == null) {
            return null;
        }
        if (!(srq instanceof TcpSharedReceiveQueue t) || !t.of(manager.registrations())) {
            throw new IllegalArgumentException("the shared receive queue " + srq + " is another device's");
        }
        return t;
    }

    // ---------------------------------------------------------------- CmEndpoint

    @Override
    public void accept(CompletionQueue completionQueue, QueuePairSpec qpSpec, byte[] answer,
                       QueuePairOwner owner) {
        if (phase != Phase.REQUESTED) {
            throw new IllegalStateException("accept: the request is " + phase);
        }
        if (qpSpec.trafficClass() >= 0) {
            Sockets.setTrafficClass(fd, qpSpec.trafficClass());   // this side's packets: each side marks its own
        }
        qp = new TcpQueuePair(fd, qpNum, manager.registrations(), (TcpCompletionQueue) completionQueue, qpSpec,
                owner.postMonitor(), this, manager.sameHost(), sharedReceives(owner));
        owner.onQueuePair(qp);
        deadlineNanos = System.nanoTime() + manager.limits().handshakeTimeoutNanos();   // the client's turn begins now
        phase = Phase.ACCEPT_SENT;
        manager.track(this);
        manager.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP);
        // A client that may share this host named its rendezvous: prove ourselves there and send its nonce.
        sameHostOffered = sameHost() && peerHello.rendezvous().length > 0
                && qp.offerRing(peerHello.rendezvous(), peerHello.nonce(), binding(true));
        send(TcpHandshake.hello(TcpHandshake.ACCEPT, qpSpec, manager.bootId(), new byte[0], new byte[16],
                sameHostOffered ? TcpHandshake.SAME_HOST_OFFERED : 0, answer));
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
    public void peerOffended(String what) {
        if (listener != null) {   // a server's peer: a client chose its server
            manager.offended(this, what);
        }
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
