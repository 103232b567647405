package dev.jrdma.provider.verbs;

import dev.jrdma.spi.PollThrottle;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.Errno;
import dev.jrdma.os.LibC;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.provider.verbs.ffi.RdmaCmEvent;
import dev.jrdma.provider.verbs.ffi.RdmaCmId;
import dev.jrdma.provider.verbs.ffi.RdmaConnParam;
import dev.jrdma.os.SockAddr;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.SourceAddress;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * rdma_cm on one event channel (non-blocking fd). Outgoing connects run as a small state
 * machine driven by the events: ADDR_RESOLVED → resolve route (or give rdma_cm a {@link
 * ChosenPath}); ROUTE_RESOLVED → create the QP and connect; ESTABLISHED / REJECTED / errors → the handler. A DISCONNECTED from the peer is
 * answered with rdma_disconnect at once, which sends the DREP the peer waits for.
 *
 * <p>An accepted connection waits for the client's RTU, which its librdmacm sends only when its
 * application reads the CONNECT_RESPONSE event: a client that never does holds our QP, its CQ and
 * receive buffers, and a place among the server's connections for as long as the kernel's CM
 * retries the REP (minutes, once the client's CM has sent an MRA). So the {@link ConnectionLimits}
 * hold on verbs too: at most {@code maxPendingHandshakes} accepted connections await their RTU
 * (past that, a request from the source that holds the most is refused, and one from another
 * source pushes out that source's oldest: {@link #makeRoom}), and each has
 * {@code handshakeTimeoutNanos} for it, then is dropped (destroying the id sends the client a REJ).
 */
final class VerbsConnectionManager implements ConnectionManager {
    final VerbsDevice device;
    private final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment eventOut = arena.allocate(ValueLayout.ADDRESS);
    /**
     * Every live id (listeners and endpoints) by its address. Concurrent: an accepted connection's
     * endpoint is closed (and forgotten here) on its own IO thread, which may not be this one.
     */
    private final Map<Long, Object> ids = new java.util.concurrent.ConcurrentHashMap<>();
    private boolean closed;
    private final ConnectionLimits limits;
    /** Accepted connections awaiting their ESTABLISHED (the client's RTU), oldest first; this thread's. */
    private final LinkedHashSet<VerbsCmEndpoint> awaitingRtu = new LinkedHashSet<>();
    /** Accepted connections dropped for their RTU (late, or pushed out); this thread's. */
    private long droppedAwaitingRtu;
    /** Late accepted connections dropped at most a pass (see {@link #dropLate}). */
    private static final int DROPS_A_PASS = 4;
    /** Requests refused at the limit, from the source that holds the most places; this thread's. */
    private long refusedAtLimit;
    /**
     * Looks at the event channel at most this often while nothing happens (and the throttle reads
     * the clock only every 64th pass). Each look is a read(2): at 20 us, a loop spinning on a
     * latency test looked every 16 passes, a syscall and a clock read every operation or two, and
     * in the Soft-RoCE VM both trap to the emulator. Connection events are not latency-critical,
     * and while one is awaited the throttle looks every pass.
     */
    private static final long CHECK_NANOS = 1_000_000;
    private final PollThrottle throttle = new PollThrottle(CHECK_NANOS);

    /**
     * What owns ids of its own on this channel besides connections (a datagram endpoint): it is
     * handed each event of them, and each CONNECT_REQUEST to a listening id of it, before the
     * event is acknowledged (its memory is valid then, and an id must not be destroyed until
     * it is), and returns what to run after the acknowledgement (or null).
     */
    interface CmClient {
        Runnable onEvent(MemorySegment event, int type, int status, MemorySegment id);
    }

    VerbsConnectionManager(VerbsDevice device, ConnectionLimits limits) {
        this.device = device;
        this.limits = limits;
        this.channel = LibRdmacm.createEventChannel();
        this.fd = LibRdmacm.eventChannelFd(channel);
        LibC.setNonBlocking(fd);
    }

    @Override
    public int fd() {
        return fd;
    }

    @Override
    public int maxConnectPrivateData() {
        return RdmaConnParam.MAX_CONNECT_PRIVATE_DATA;
    }

    MemorySegment channel() {
        return channel;
    }

    /** Routes the events of {@code id} to {@code client}. */
    void adopt(MemorySegment id, CmClient client) {
        ids.put(id.address(), client);
    }

    @Override
    public DatagramQueuePair openDatagram(InetSocketAddress bind, CompletionChannel completions, int sendDepth,
                                          int receiveDepth) {
        VerbsDatagramQueuePair qp = new VerbsDatagramQueuePair(this, channel, bind, completions, sendDepth, receiveDepth);
        adopt(qp.listenId(), qp);
        adopt(qp.qpId(), qp);
        return qp;
    }

    @Override
    public CmListener listen(InetSocketAddress address, int backlog) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = LibRdmacm.createId(channel, RdmaCmId.PS_TCP, a);
            try {
                LibRdmacm.bindAddr(id, SockAddr.of(address, a));
                MemorySegment verbs = RdmaCmId.verbs(id);
                if (!verbs.equals(MemorySegment.NULL) && verbs.address() != device.context.address()) {
                    throw new RdmaException("address " + address + " belongs to another RDMA device than "
                            + device.name() + ": build the Rdma with that device, or listen on an address of "
                            + device.name());
                }
                LibRdmacm.listen(id, backlog);
            } catch (RuntimeException e) {
                LibRdmacm.destroyId(id);
                throw e;
            }
            InetSocketAddress bound = SockAddr.toInet(RdmaCmId.srcAddr(id));
            VerbsCmListener l = new VerbsCmListener(this, id, bound);
            ids.put(id.address(), l);
            return l;
        }
    }

    @Override
    public CmEndpoint connect(InetSocketAddress remote, CompletionQueue cq, QueuePairSpec spec, byte[] privateData,
                              int timeoutMs, QueuePairOwner owner) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = LibRdmacm.createId(channel, RdmaCmId.PS_TCP, a);
            VerbsCmEndpoint ep = new VerbsCmEndpoint(this, id);
            ep.pendingCq = cq;
            ep.pendingSpec = spec;
            ep.pendingPrivateData = privateData;
            ep.timeoutMs = timeoutMs;
            ep.pendingOwner = owner;
            ids.put(id.address(), ep);
            try {
                if (spec.trafficClass() >= 0) {
                    LibRdmacm.setTos(id, spec.trafficClass());   // before the route is resolved: the path is made with it
                }
                java.net.InetAddress from = device.sourceAddressFor(remote.getAddress());
                InetSocketAddress source = from == null ? null : new InetSocketAddress(from, 0);
                LibRdmacm.resolveAddr(id, source == null ? MemorySegment.NULL : SockAddr.of(source, a),
                        SockAddr.of(remote, a), timeoutMs);
            } catch (RuntimeException e) {
                ep.close();
                throw e;
            }
            return ep;
        }
    }

    @Override
    public int processEvents(CmEventHandler handler) {
        // Called on every pass of the IO thread; rdma_get_cm_event on the non-blocking channel is a
        // read(2) even when there is nothing, which a spinning data path must not pay each pass.
        // This head is what such a pass runs (small enough for the JIT to inline into the pass):
        // no RTU awaited and the throttle not due is the answer of almost every pass.
        boolean rtuAwaited = !awaitingRtu.isEmpty();
        if (!rtuAwaited && !throttle.due()) {
            return 0;
        }
        return processDueEvents(handler, !rtuAwaited);
    }

    /** {@link #processEvents} when an RTU is awaited or ({@code due}) the throttle said look. */
    private int processDueEvents(CmEventHandler handler, boolean due) {
        if (closed) {
            return 0;
        }
        // The deadlines first, each pass while some accepted connection awaits its RTU (a look at the
        // oldest, no syscall): behind the throttle they waited for its 64th pass, which a thread that
        // wakes every 50 ms for its timers and sleeps again after a pass or two reaches only seconds late.
        int n = awaitingRtu.isEmpty() ? 0 : dropLate(handler);
        if (!due && !throttle.due()) {
            return n;
        }
        MemorySegment event;
        while (!closed && (event = LibRdmacm.tryGetCmEvent(channel, eventOut)) != null) {
            n++;
            int type = RdmaCmEvent.event(event);
            int status = RdmaCmEvent.status(event);
            long idAddr = RdmaCmEvent.id(event).address();
            Object client = ids.get(type == RdmaCmEvent.CONNECT_REQUEST ? RdmaCmEvent.listenId(event).address() : idAddr);
            if (client instanceof CmClient c) {
                Runnable after;
                try {
                    after = c.onEvent(event, type, status, RdmaCmEvent.id(event));
                } finally {
                    LibRdmacm.ackCmEvent(event);
                }
                if (after != null) {
                    after.run();
                }
                continue;
            }
            byte[] privateData = hasConnParam(type) ? RdmaCmEvent.privateData(event) : new byte[0];
            Object owner = type == RdmaCmEvent.CONNECT_REQUEST ? null : ids.get(idAddr);
            VerbsCmListener listener = type == RdmaCmEvent.CONNECT_REQUEST
                    ? (VerbsCmListener) ids.get(RdmaCmEvent.listenId(event).address()) : null;
            MemorySegment newId = RdmaCmEvent.id(event);
            // Acknowledged before the handler runs: rdma_destroy_id (in close) waits for unacked events.
            LibRdmacm.ackCmEvent(event);
            dispatch(handler, type, status, privateData, owner, listener, newId);
        }
        throttle.looked(n > 0);
        return n;
    }

    /** An accepted connection's id now awaits the client's RTU; on this manager's thread (the accept). */
    void awaitingRtu(VerbsCmEndpoint ep) {
        ep.acceptedAtNanos = System.nanoTime();
        awaitingRtu.add(ep);
    }

    /** How many accepted connections await their RTU (those closed meanwhile no longer count). */
    int awaitingRtuCount() {
        awaitingRtu.removeIf(VerbsCmEndpoint::isClosed);
        return awaitingRtu.size();
    }

    /**
     * Drops the accepted connections whose RTU is later than the handshake timeout, at most
     * {@value #DROPS_A_PASS} a pass; returns how many. Each drop destroys a QP, its CQ and
     * receive buffers, which costs milliseconds where the CPU is emulated: a flood's places all
     * time out together, and a request that came meanwhile (an honest client's) is looked at
     * between the batches, not after all of them.
     */
    private int dropLate(CmEventHandler handler) {
        long now = System.nanoTime();
        List<VerbsCmEndpoint> late = null;
        for (Iterator<VerbsCmEndpoint> it = awaitingRtu.iterator(); it.hasNext()
                && (late == null || late.size() < DROPS_A_PASS); ) {
            VerbsCmEndpoint ep = it.next();
            if (ep.isClosed()) {
                it.remove();
            } else if (now - ep.acceptedAtNanos - limits.handshakeTimeoutNanos() > 0) {
                it.remove();
                (late == null ? late = new ArrayList<>() : late).add(ep);
            } else {
                break;   // oldest first: the rest are younger
            }
        }
        if (late == null) {
            return 0;
        }
        for (VerbsCmEndpoint ep : late) {
            drop(handler, ep, "the client sent no RTU within the handshake timeout of "
                    + TimeUnit.NANOSECONDS.toMillis(limits.handshakeTimeoutNanos()) + " ms (Rdma.Builder.handshakeTimeout)");
        }
        return late.size();
    }

    /**
     * Whether {@code request} may be accepted now. Below {@code maxPendingHandshakes} accepted
     * connections awaiting their RTU it may. At the limit, a request from the source that holds
     * the most of them (or as many as the most) is refused at once, cheaply: no QP is made for it,
     * so a source that floods costs us a REJ a request, and its places stay its own until their
     * handshake timeout. A request from any other source pushes out the oldest of that source's.
     * An honest burst from one address larger than the limit (64 members forming a group on one
     * host stay well under the default 128) gets the refusal's reason and may retry.
     */
    private boolean makeRoom(CmEventHandler handler, VerbsCmEndpoint request) {
        if (awaitingRtuCount() < limits.maxPendingHandshakes()) {
            return true;
        }
        Map<SourceAddress, Integer> bySource = new HashMap<>();
        SourceAddress busiest = null;
        int most = 0;
        for (VerbsCmEndpoint ep : awaitingRtu) {
            int k = bySource.merge(ep.source(), 1, Integer::sum);
            if (k > most) {
                most = k;
                busiest = ep.source();
            }
        }
        if (bySource.getOrDefault(request.source(), 0) >= most) {
            refusedAtLimit++;
            Log.limited("verbs.pendingRefused", System.Logger.Level.INFO, "verbs: refused a connection request from "
                    + request.remoteAddress() + ": " + limits.maxPendingHandshakes() + " accepted connections await their"
                    + " RTU (Rdma.Builder.maxPendingHandshakes), " + bySource.get(request.source())
                    + " of them from its address (" + refusedAtLimit + " refused so far)");
            return false;
        }
        for (VerbsCmEndpoint ep : awaitingRtu) {
            if (ep.source().equals(busiest)) {
                awaitingRtu.remove(ep);
                drop(handler, ep, "dropped to make room: " + limits.maxPendingHandshakes() + " accepted connections"
                        + " awaited their RTU (Rdma.Builder.maxPendingHandshakes), " + most + " of them from "
                        + ep.remoteAddress().getAddress().getHostAddress());
                return true;
            }
        }
        return true;
    }

    private void drop(CmEventHandler handler, VerbsCmEndpoint ep, String why) {
        long n = ++droppedAwaitingRtu;
        Log.limited("verbs.rtuLate", System.Logger.Level.INFO, "verbs: " + why + "; dropped " + ep.remoteAddress()
                + " (" + n + " so far)");
        handler.onError(ep, why, -Errno.ETIMEDOUT);
    }

    private static boolean hasConnParam(int type) {
        return type == RdmaCmEvent.CONNECT_REQUEST || type == RdmaCmEvent.ESTABLISHED
                || type == RdmaCmEvent.REJECTED || type == RdmaCmEvent.CONNECT_RESPONSE;
    }

    private void dispatch(CmEventHandler handler, int type, int status, byte[] privateData, Object owner,
                          VerbsCmListener listener, MemorySegment newId) {
        if (type == RdmaCmEvent.CONNECT_REQUEST) {
            VerbsCmEndpoint request = new VerbsCmEndpoint(this, newId);
            ids.put(request.id.address(), request);
            if (listener == null || RdmaCmId.verbs(request.id).address() != device.context.address()) {
                request.reject(null);   // a request through another device: this Rdma cannot serve it
                request.close();
                return;
            }
            if (!makeRoom(handler, request)) {
                request.reject(handler.rejection("too many handshakes under way from this address; retry later"));
                request.close();
                return;
            }
            handler.onConnectRequest(listener, request, privateData);
            return;
        }
        if (!(owner instanceof VerbsCmEndpoint ep)) {
            return;   // an event of an id closed meanwhile, or of a listener (nothing to do)
        }
        switch (type) {
            case RdmaCmEvent.ADDR_RESOLVED -> {
                if (RdmaCmId.verbs(ep.id).address() != device.context.address()) {
                    handler.onError(ep, "the route to " + ep.remoteAddress() + " leaves through another RDMA device, not "
                            + device.name(), 0);
                    return;
                }
                try {
                    if (ep.pendingSpec.choosesPath()) {
                        ChosenPath.give(ep.id, ep.pendingSpec, device);   // its service level or flow label
                    } else {
                        LibRdmacm.resolveRoute(ep.id, ep.timeoutMs);
                    }
                } catch (RuntimeException e) {
                    handler.onError(ep, e.getMessage(), 0);
                }
            }
            case RdmaCmEvent.ROUTE_RESOLVED -> {
                try {
                    ep.createQp(ep.pendingCq, ep.pendingSpec, ep.pendingOwner);
                    ep.pendingOwner.onQueuePair(ep.queuePair());
                    ep.applyAckTimeout(ep.pendingSpec);
                    VerbsCmEndpoint.withConnParam(ep.pendingSpec, ep.pendingPrivateData, p -> LibRdmacm.connect(ep.id, p));
                } catch (RuntimeException e) {
                    handler.onError(ep, e.getMessage(), 0);
                }
            }
            case RdmaCmEvent.ESTABLISHED -> {
                awaitingRtu.remove(ep);
                if (ep.pendingSpec != null) {   // an outgoing connection: its QP reached RTS just now
                    try {
                        ep.applyMinRnrTimer();
                    } catch (RuntimeException e) {
                        handler.onError(ep, e.getMessage(), 0);
                        return;
                    }
                }
                handler.onEstablished(ep, privateData);
            }
            case RdmaCmEvent.REJECTED -> {
                awaitingRtu.remove(ep);
                handler.onRejected(ep, status, privateData);
            }
            case RdmaCmEvent.ADDR_ERROR, RdmaCmEvent.ROUTE_ERROR, RdmaCmEvent.CONNECT_ERROR, RdmaCmEvent.UNREACHABLE -> {
                awaitingRtu.remove(ep);
                handler.onError(ep, RdmaCmEvent.name(type) + " (status " + status + ")", status);
            }
            case RdmaCmEvent.DISCONNECTED, RdmaCmEvent.DEVICE_REMOVAL -> {
                awaitingRtu.remove(ep);
                ep.disconnect();   // answers the peer's DREQ: rdma_disconnect sends the DREP it waits for
                handler.onDisconnected(ep);
            }
            default -> {
                // TIMEWAIT_EXIT, ADDR_CHANGE, CONNECT_RESPONSE (not used with a QP): nothing to do.
            }
        }
    }

    void forget(MemorySegment id) {
        ids.remove(id.address());
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Object o : new ArrayList<>(ids.values())) {
            if (o instanceof AutoCloseable c) {
                try {
                    c.close();
                } catch (Exception e) {
                    // keep closing the rest
                }
            }
        }
        LibRdmacm.destroyEventChannel(channel);
        arena.close();
    }
}
