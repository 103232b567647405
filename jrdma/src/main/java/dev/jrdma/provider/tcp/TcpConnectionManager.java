package dev.jrdma.provider.tcp;

import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.exceptions.NativeRdmaException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;
import dev.jrdma.os.LibC;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.PollThrottle;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.SourceAddress;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * rdma_cm's part for the tcp provider: listening sockets, connects, the {@link TcpHandshake},
 * and disconnects, reported as {@link CmEventHandler} events from {@link #processEvents} on the
 * thread that drives it. Its fd is an epoll set of the sockets it waits on, plus an eventfd for
 * disconnects that queue pairs report from their own threads.
 */
final class TcpConnectionManager implements ConnectionManager {
    private static final int MAX_EVENTS = 64;
    /** Connections taken from one listener in one pass: the handshakes under way are read between. */
    static final int MAX_ACCEPTS_PER_PASS = 64;
    private final TcpDevice device;
    private final Arena arena = Arena.ofShared();
    private final int epfd;
    private final int wakeFd;
    private final MemorySegment events = arena.allocate(Sockets.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
    private final MemorySegment ctl = arena.allocate(16, 8);
    private final MemorySegment drain = arena.allocate(8, 8);
    private final ThreadLocal<MemorySegment> signal = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8, 8));
    /** Listeners and handshaking endpoints by fd; the manager's thread (and close from others). */
    private final Map<Integer, Object> byFd = new HashMap<>();
    private final List<TcpCmEndpoint> handshaking = new ArrayList<>();
    private final ConcurrentLinkedQueue<TcpCmEndpoint> disconnects = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Offence> offences = new ConcurrentLinkedQueue<>();
    /** Listeners not watched until their accept back-off ends; guarded by this. */
    private final List<TcpCmListener> backingOff = new ArrayList<>();
    static final long MAX_ACCEPT_BACKOFF_MS = 320;
    private volatile boolean closed;
    /** Looks at the sockets at most this often while nothing happens. */
    private static final long CHECK_NANOS = 20_000;
    private final PollThrottle throttle = new PollThrottle(CHECK_NANOS);

    private final ConnectionLimits limits;
    /** Accepted connections in their handshake (server side); guarded by this. */
    private int pendingHandshakes;

    /** {@return what peers are allowed before they are connected} */
    ConnectionLimits limits() {
        return limits;
    }

    TcpConnectionManager(TcpDevice device, ConnectionLimits limits) {
        this.device = device;
        this.limits = limits;
        epfd = Sockets.epollCreate();
        wakeFd = LibC.eventFd();
        Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_ADD, wakeFd, Sockets.EPOLLIN, ctl);
    }

    TcpRegistrations registrations() {
        return device.registrations();
    }

    byte[] bootId() {
        return device.bootId();
    }

    TcpSameHost sameHost() {
        return device.sameHost;
    }

    /** The same-host descriptor this manager's epoll watches (the rendezvous), or -1; guarded by this. */
    private int watchedSameHost = -1;

    /** Watches the same-host machinery's descriptor (once it exists: after the first HELLO that named it). Any thread. */
    void watchSameHost() {
        TcpSameHost s = device.sameHost;
        int fd = s == null ? -1 : s.watchFd();
        synchronized (this) {
            if (fd < 0 || fd == watchedSameHost || closed) {
                return;
            }
            if (Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_ADD, fd, Sockets.EPOLLIN, ctl) == 0) {
                watchedSameHost = fd;
                byFd.put(fd, s);
            }
        }
    }

    @Override
    public int fd() {
        return epfd;
    }

    @Override
    public DatagramQueuePair openDatagram(InetSocketAddress bind, CompletionChannel channel,
                                                        int sendDepth, int receiveDepth) {
        return new TcpDatagramQueuePair(registrations(), (TcpCompletionChannel) channel, bind, sendDepth, receiveDepth);
    }

    @Override
    public CmListener listen(InetSocketAddress address, int backlog) {
        int fd = Sockets.socketFor(address);
        try {
            Sockets.setIntOption(fd, Sockets.SOL_SOCKET, Sockets.SO_REUSEADDR, 1, "SO_REUSEADDR");
            // Our client speaks first (HELLO): the kernel holds a connection that has sent nothing
            // as a request in its SYN queue (SYN cookies when that fills), not in the accept
            // backlog or our memory, for about this long.
            Sockets.setIntOption(fd, Sockets.IPPROTO_TCP, Sockets.TCP_DEFER_ACCEPT, deferAcceptSeconds(), "TCP_DEFER_ACCEPT");
            Sockets.bind(fd, address);
            Sockets.listen(fd, backlog);
            TcpCmListener l = new TcpCmListener(this, fd, Sockets.localAddress(fd));
            synchronized (this) {
                byFd.put(fd, l);
            }
            watchNew(fd, Sockets.EPOLLIN);
            return l;
        } catch (RuntimeException e) {
            Sockets.close(fd);
            throw e;
        }
    }

    @Override
    public CmEndpoint connect(InetSocketAddress remote, CompletionQueue cq, QueuePairSpec spec, byte[] privateData,
                              int timeoutMs, QueuePairOwner owner) {
        if (privateData.length > TcpHandshake.MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data of " + privateData.length + " bytes; tcp carries at most "
                    + TcpHandshake.MAX_PRIVATE_DATA);
        }
        int fd = Sockets.socketFor(remote);
        try {
            Sockets.setIntOption(fd, Sockets.IPPROTO_TCP, Sockets.TCP_NODELAY, 1, "TCP_NODELAY");
            if (spec.trafficClass() >= 0) {
                Sockets.setTrafficClass(fd, spec.trafficClass());   // before connect: the SYN carries it too
            }
            int rc = Sockets.connect(fd, remote);
            if (rc != 0 && rc != Errno.EINPROGRESS) {
                if (rc != Errno.ECONNREFUSED) {
                    throw Errno.failure("connect", rc, String.valueOf(remote));
                }
            }
            TcpCmEndpoint e = new TcpCmEndpoint(this, fd, null, remote, TcpCmEndpoint.Phase.CONNECTING,
                    System.nanoTime() + timeoutMs * 1_000_000L, device.nextQpNum());
            e.outgoing((TcpCompletionQueue) cq, spec, privateData, owner);
            track(e);
            watchNew(fd, Sockets.EPOLLOUT | Sockets.EPOLLIN | Sockets.EPOLLRDHUP);
            return e;
        } catch (RuntimeException ex) {
            Sockets.close(fd);
            throw ex;
        }
    }

    synchronized void track(TcpCmEndpoint e) {
        byFd.put(e.fd, e);
        if (!handshaking.contains(e)) {
            handshaking.add(e);
        }
    }

    /** {@code e}'s HELLO was read: it leaves the pending places (see {@link TcpCmEndpoint}'s requested). */
    synchronized void helloRead(TcpCmEndpoint e) {
        if (e.countsAsPending) {
            e.countsAsPending = false;
            pendingHandshakes--;
        }
    }

    /** Stops waiting on {@code fd} (handshake over, or closed). Any thread. */
    void forget(int fd) {
        synchronized (this) {
            Object o = byFd.remove(fd);
            if (o instanceof TcpCmEndpoint e) {
                handshaking.remove(e);
                if (e.countsAsPending) {
                    e.countsAsPending = false;
                    pendingHandshakes--;
                }
            }
        }
        synchronized (this) {
            if (!closed) {
                Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_DEL, fd, 0, ctl);
            }
        }
    }

    private void watchNew(int fd, int ev) {
        int rc;
        synchronized (this) {
            rc = Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_ADD, fd, ev, ctl);
        }
        if (rc != 0) {
            throw Errno.failure("epoll_ctl", rc, "adding fd " + fd);
        }
    }

    /** Changes what a handshaking socket waits for (0: nothing for now). */
    synchronized void watch(int fd, int ev) {
        if (!closed) {
            Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_MOD, fd, ev, ctl);
        }
    }

    /** The peer of an established endpoint misused it: reported from processEvents. Any thread. */
    void offended(TcpCmEndpoint e, String what) {
        offences.add(new Offence(e, what));
        if (!closed) {
            LibC.eventFdSignal(wakeFd, signal.get());
        }
    }

    private record Offence(TcpCmEndpoint endpoint, String what) {
    }

    /** An established endpoint is down (either side): reported from processEvents. Any thread. */
    void disconnected(TcpCmEndpoint e) {
        disconnects.add(e);
        if (!closed) {
            LibC.eventFdSignal(wakeFd, signal.get());
        }
    }

    @Override
    public int processEvents(CmEventHandler handler) {
        if (closed) {
            return 0;
        }
        // Called on every pass of a busy IO thread; connection set-up is not latency-critical, so
        // look (a syscall) at most every CHECK_NANOS unless something was found last time.
        if (!throttle.due()) {
            return 0;
        }
        if (!backingOff.isEmpty()) {
            resumeListeners();
        }
        int n = Sockets.epollWait(epfd, events, MAX_EVENTS, 0);
        // After the wait: an offence reported before a request that the wait found is told first,
        // so the request is judged with it (a guesser's next connection is refused, not let in).
        int handled = drainOffences(handler);
        for (int i = 0; i < n; i++) {
            int fd = Sockets.epollEventFd(events, i);
            if (fd == wakeFd) {
                LibC.eventFdDrain(wakeFd, drain);
                continue;
            }
            Object o;
            synchronized (this) {
                o = byFd.get(fd);
            }
            if (o instanceof TcpCmListener l) {
                handled += acceptAll(l, handler);
            } else if (o instanceof TcpSameHost s) {
                s.tend();
                handled++;
            } else if (o instanceof TcpCmEndpoint e) {
                e.onReady(handler);
                handled++;
            }
        }
        handled += drainOffences(handler);
        TcpCmEndpoint d;
        while ((d = disconnects.poll()) != null) {
            d.reportDisconnect(handler);
            handled++;
        }
        if (!handshaking.isEmpty()) {
            long now = System.nanoTime();
            List<TcpCmEndpoint> late = new ArrayList<>();
            synchronized (this) {
                for (TcpCmEndpoint e : handshaking) {
                    if (now - e.deadlineNanos > 0) {
                        late.add(e);
                    }
                }
            }
            for (TcpCmEndpoint e : late) {
                e.timedOut(handler);
                handled++;
            }
        }
        throttle.looked(handled > 0 || !handshaking.isEmpty() || !backingOff.isEmpty());
        return handled;
    }

    /** A silent connection waits in the kernel for the handshake timeout (at least 1 s: the option counts seconds). */
    private int deferAcceptSeconds() {
        return (int) Math.max(1, Math.min(60, TimeUnit.NANOSECONDS.toSeconds(limits.handshakeTimeoutNanos())));
    }

    /** Tells the handler of the offences reported since the last look (see {@link #offended}). */
    private int drainOffences(CmEventHandler handler) {
        int n = 0;
        for (Offence o; (o = offences.poll()) != null; n++) {
            handler.onPeerOffence(o.endpoint(), o.what());
        }
        return n;
    }

    /**
     * Takes what waits on {@code l}, at most {@value #MAX_ACCEPTS_PER_PASS} a pass (the sockets
     * already in their handshake are read between), each read at once: with TCP_DEFER_ACCEPT an
     * honest client's HELLO is there when it is accepted, so it leaves the pending ones before
     * any newcomer could push it out.
     */
    private int acceptAll(TcpCmListener l, CmEventHandler handler) {
        int count = 0;
        for (int s; count < MAX_ACCEPTS_PER_PASS && (s = acceptUnlessFull(l, handler)) >= 0; count++) {
            TcpCmEndpoint e;
            try {
                Sockets.setIntOption(s, Sockets.IPPROTO_TCP, Sockets.TCP_NODELAY, 1, "TCP_NODELAY");
                e = new TcpCmEndpoint(this, s, l, Sockets.remoteAddress(s),
                        TcpCmEndpoint.Phase.AWAITING_HELLO, System.nanoTime() + limits.handshakeTimeoutNanos(),
                        device.nextQpNum());
                watchNew(s, Sockets.EPOLLIN | Sockets.EPOLLRDHUP);   // first: a failure leaves nothing tracked
                synchronized (this) {
                    e.countsAsPending = true;
                    pendingHandshakes++;
                }
                track(e);
            } catch (RdmaException | IllegalStateException ex) {
                forget(s);
                Sockets.close(s);
                continue;
            }
            try {
                e.onReady(handler);
            } catch (RuntimeException ex) {
                // The endpoint owns the socket now (and may own a queue pair): it closes them, once.
                Log.quietly(System.Logger.Level.WARNING, "tcp: dropped a connection from " + e.remoteAddress()
                        + " whose handshake failed: " + ex, null);
                e.close();
            }
        }
        return count;   // more may wait: the listener stays readable, and a pass that did work looks again soon
    }

    /**
     * The handshake to drop to make room for one more when {@link ConnectionLimits#maxPendingHandshakes}
     * are under way, or null when none may go: the oldest of those waiting for the client's HELLO,
     * from the source address that holds the most of them (one source, however many sockets it
     * opens, pushes out its own first). An honest client sends its HELLO as it connects, and is
     * read as it is accepted: what waits longest for one is a socket that says nothing, or a byte
     * at a time. Under pressure a handshake's deadline thus shrinks from the handshake timeout to
     * the time until {@code maxPendingHandshakes} newer ones came. Those further on are never
     * dropped: one waiting for the application is waiting for us, and one waiting for the
     * client's READY_TO_USE may be a client of an honest burst (a 64-member group forming on one
     * host) that already counts the connection as made (dropping those, 1 s old or more, broke
     * such a group in a test). Guarded by this.
     */
    private TcpCmEndpoint evictionCandidate() {
        Map<SourceAddress, Integer> bySource = new HashMap<>();
        SourceAddress busiest = null;
        int most = 0;
        for (TcpCmEndpoint e : handshaking) {
            if (e.countsAsPending && e.phase == TcpCmEndpoint.Phase.AWAITING_HELLO) {
                SourceAddress a = SourceAddress.of(e.remoteAddress().getAddress());
                int n = bySource.merge(a, 1, Integer::sum);
                if (n > most) {
                    most = n;
                    busiest = a;
                }
            }
        }
        for (TcpCmEndpoint e : handshaking) {
            if (e.countsAsPending && e.phase == TcpCmEndpoint.Phase.AWAITING_HELLO
                    && SourceAddress.of(e.remoteAddress().getAddress()).equals(busiest)) {
                return e;
            }
        }
        return null;
    }

    /**
     * Drops a handshake to make room, {@code first} the candidate: each is read first, since what
     * its client sent meanwhile counts (this side may be the slow one); one that moved on stays,
     * and the next candidate is tried, up to 8. On the manager's thread, outside the lock.
     */
    private void makeRoom(TcpCmEndpoint first, CmEventHandler handler) {
        TcpCmEndpoint victim = first;
        for (int tries = 0; victim != null && tries < 8; tries++) {
            TcpCmEndpoint.Phase before = victim.phase;
            victim.onReady(handler);
            if (victim.phase == before && victim.countsAsPending) {
                evict(victim);
                return;
            }
            synchronized (this) {
                victim = evictionCandidate();
            }
        }
    }

    /** Drops {@code victim} to make room (see {@link #evictionCandidate}); on the manager's thread, outside the lock. */
    private void evict(TcpCmEndpoint victim) {
        long n;
        synchronized (this) {
            n = ++evicted;
        }
        Log.limited("tcp.handshakeEvicted", System.Logger.Level.INFO, "tcp: " + limits.maxPendingHandshakes()
                + " handshakes pending: dropped the oldest waiting for its HELLO, from "
                + victim.remoteAddress() + " (" + n + " dropped so far)");
        victim.close();   // waiting for its HELLO: nothing of it exists beyond the socket
    }

    /** Handshakes dropped to make room ({@link #evictionCandidate}); guarded by this. */
    private long evicted;

    /**
     * The next connection waiting on {@code l}, or -1. Out of file descriptors (EMFILE, ENFILE)
     * or kernel memory (ENOBUFS, ENOMEM), the connection stays in the kernel's backlog: the
     * listener is not watched for a while (10 ms, doubling to {@value #MAX_ACCEPT_BACKOFF_MS}
     * ms while it lasts) rather than failing this thread or spinning on a socket that stays
     * readable, and is looked at again when the time is up ({@link #resumeListeners}).
     */
    private int acceptOrBackOff(TcpCmListener l) {
        try {
            int s = Sockets.accept(l.fd);
            if (s >= 0) {
                l.acceptBackoffMs = 0;
            }
            return s;
        } catch (NativeRdmaException e) {
            int errno = e.errno();
            if (errno != Errno.EMFILE && errno != Errno.ENFILE && errno != Errno.ENOBUFS && errno != Errno.ENOMEM) {
                throw e;
            }
            boolean first = l.acceptBackoffMs == 0;
            l.acceptBackoffMs = Math.min(MAX_ACCEPT_BACKOFF_MS, Math.max(10, l.acceptBackoffMs * 2));
            l.resumeAt = System.nanoTime() + l.acceptBackoffMs * 1_000_000L;
            watch(l.fd, 0);
            synchronized (this) {
                if (!backingOff.contains(l)) {
                    backingOff.add(l);
                }
            }
            if (first) {
                Log.quietly(System.Logger.Level.WARNING, "tcp: cannot accept on " + l.address() + ": " + e.getMessage()
                        + "; waiting connections stay in the backlog, and accepting is tried again as resources come"
                        + " back", null);
            }
            return -1;
        }
    }

    /**
     * The next connection waiting on {@code l}, unless {@link ConnectionLimits#maxPendingHandshakes}
     * are under way: then none (-1), and the listener is looked at again in 10 ms. What waits stays
     * in the kernel's backlog, costing us nothing; a slow handshake frees its place within the
     * handshake time-out.
     */
    private int acceptUnlessFull(TcpCmListener l, CmEventHandler handler) {
        TcpCmEndpoint victim = null;
        synchronized (this) {
            if (pendingHandshakes >= limits.maxPendingHandshakes() && (victim = evictionCandidate()) == null) {
                l.resumeAt = System.nanoTime() + 10_000_000L;
                watch(l.fd, 0);
                if (!backingOff.contains(l)) {
                    backingOff.add(l);
                }
                return -1;
            }
        }
        int s = acceptOrBackOff(l);
        if (s >= 0 && victim != null) {
            makeRoom(victim, handler);   // only once a newcomer is in hand: an empty backlog costs nobody their place
        }
        return s;
    }

    /** Watches again the listeners whose accept back-off is over; on the manager's thread. */
    private int resumeListeners() {
        long now = System.nanoTime();
        int resumed = 0;
        synchronized (this) {
            for (var it = backingOff.iterator(); it.hasNext(); ) {
                TcpCmListener l = it.next();
                if (now - l.resumeAt >= 0) {
                    it.remove();
                    if (byFd.get(l.fd) == l) {
                        watch(l.fd, Sockets.EPOLLIN);
                    }
                    resumed++;
                }
            }
        }
        return resumed;
    }

    @Override
    public int maxConnectPrivateData() {
        return TcpHandshake.MAX_PRIVATE_DATA;
    }

    @Override
    public void close() {
        List<Object> left;
        synchronized (this) {
            left = new ArrayList<>(byFd.values());
        }
        for (Object o : left) {
            if (o instanceof TcpCmListener l) {
                l.close();
            } else if (o instanceof TcpCmEndpoint e) {
                e.close();
            }
        }
        synchronized (this) {
            closed = true;
        }
        Sockets.close(wakeFd);
        Sockets.close(epfd);
        arena.close();
    }
}
