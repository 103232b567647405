package dev.jrdma.provider.verbs;

import dev.jrdma.spi.PollThrottle;
import dev.jrdma.exceptions.RdmaException;
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
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;

/**
 * rdma_cm on one event channel (non-blocking fd). Outgoing connects run as a small state
 * machine driven by the events: ADDR_RESOLVED → resolve route (or give rdma_cm a {@link
 * ChosenPath}); ROUTE_RESOLVED → create the QP and connect; ESTABLISHED / REJECTED / errors → the handler. A DISCONNECTED from the peer is
 * answered with rdma_disconnect at once, which sends the DREP the peer waits for.
 */
final class VerbsConnectionManager implements ConnectionManager {
    final VerbsDevice device;
    private final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment eventOut = arena.allocate(ValueLayout.ADDRESS);
    /** Every live id (listeners and endpoints) by its address. */
    private final Map<Long, Object> ids = new HashMap<>();
    private boolean closed;
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

    VerbsConnectionManager(VerbsDevice device) {
        this.device = device;
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
        if (closed || !throttle.due()) {
            return 0;
        }
        int n = 0;
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
            case RdmaCmEvent.REJECTED -> handler.onRejected(ep, status, privateData);
            case RdmaCmEvent.ADDR_ERROR, RdmaCmEvent.ROUTE_ERROR, RdmaCmEvent.CONNECT_ERROR, RdmaCmEvent.UNREACHABLE ->
                    handler.onError(ep, RdmaCmEvent.name(type) + " (status " + status + ")", status);
            case RdmaCmEvent.DISCONNECTED, RdmaCmEvent.DEVICE_REMOVAL -> {
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
