package dev.jrdma.provider.verbs;

import static dev.jrdma.os.CLayouts.offset;

import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.Errno;
import dev.jrdma.os.SockAddr;
import dev.jrdma.provider.verbs.ffi.IbvContext;
import dev.jrdma.provider.verbs.ffi.IbvQp;
import dev.jrdma.provider.verbs.ffi.IbvQpAttr;
import dev.jrdma.provider.verbs.ffi.IbvQpInitAttr;
import dev.jrdma.provider.verbs.ffi.IbvRecvWr;
import dev.jrdma.provider.verbs.ffi.IbvSendWr;
import dev.jrdma.provider.verbs.ffi.IbvSge;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.provider.verbs.ffi.RdmaCmEvent;
import dev.jrdma.provider.verbs.ffi.RdmaCmId;
import dev.jrdma.provider.verbs.ffi.RdmaConnParam;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.DatagramPeer;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.DatagramSenderTable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A UD queue pair found through rdma_cm (RDMA_PS_UDP), in three ids of the manager's event channel:
 * <ul>
 *   <li>one bound to the endpoint's address that listens, and answers each SIDR request with
 *       this QP's number (rdma_accept with {@code conn_param.qp_num} and no QP of its own);</li>
 *   <li>one bound to the same IP address (any port) that owns the QP ({@code rdma_create_qp}
 *       brings a UD QP to RTS with Q_Key {@code RDMA_UDP_QKEY}) and joins multicast groups (a
 *       listening id cannot: rdma_cm joins only from a bound or resolved id);</li>
 *   <li>one per {@link #resolve} in progress: address, route, then a SIDR request whose
 *       ESTABLISHED event carries the address handle's attributes, the peer's QPN and Q_Key.</li>
 * </ul>
 * Every receive buffer starts with the 40-byte GRH (RoCE v2 over IPv4: the IPv4 header in its
 * last 20 bytes). A sender's address handle is built from its IP address in the GRH rather than
 * with {@code ibv_create_ah_from_wc}, which cannot answer a datagram sent to a multicast group
 * (docs/research/ud-multicast-on-rxe.md).
 *
 * <p>Senders' address handles live in a {@link DatagramSenderTable} of at most {@code maxPeers}:
 * the least recently seen sender is evicted for a new one, and its handle destroyed as soon as
 * no send to it is in flight (each send holds its peer from the post to its completion: a count
 * in the peer, the peer in its slot of {@link #inFlight}). A send to an evicted peer is answered
 * {@link #ESTALE} and the endpoint {@link #renew}s it: a new handle for the same IP address and
 * QPN, in the table again. Resolved and group peers are the application's, kept until close.
 */
final class VerbsDatagramQueuePair implements DatagramQueuePair, VerbsConnectionManager.CmClient, AutoCloseable {
    static final int GRH = 40;
    /** {@code RDMA_UDP_QKEY}: the Q_Key of every rdma_cm UD QP and group. */
    static final int UDP_QKEY = 0x01234567;

    private final VerbsConnectionManager manager;
    private final VerbsDevice device;
    private final VerbsCompletionQueue cq;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment listenId;
    private final MemorySegment qpId;
    private final MemorySegment qp;
    private final int qpNum;
    private final InetSocketAddress local;
    private final int maxMessage;
    private final int sendDepth;
    private final int portNum;
    private final int sgidIndex;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final MemorySegment sendWr = arena.allocate(IbvSendWr.LAYOUT);
    private final MemorySegment sendSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment recvWr = arena.allocate(IbvRecvWr.LAYOUT);
    private final MemorySegment recvSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment badSend = arena.allocate(ValueLayout.ADDRESS);
    private final MemorySegment badRecv = arena.allocate(ValueLayout.ADDRESS);
    /** Senders by IP address and QPN, an evicted one retired (its handle goes once no send holds it); guarded by this. */
    private final DatagramSenderTable<SenderKey, VerbsDatagramPeer> senders =
            new DatagramSenderTable<>(VerbsDatagramPeer::retire);
    /** The address handles of resolves and groups, destroyed at close; guarded by this. */
    private final List<VerbsDatagramPeer> peers = new ArrayList<>();
    /**
     * The sender peer each send in flight holds, by its slot (wrId), or null: set by the poster
     * before the post, taken by the poll at the completion, read at close (after the QP is gone).
     */
    private final VerbsDatagramPeer[] inFlight;
    private static final VarHandle IN_FLIGHT = MethodHandles.arrayElementVarHandle(VerbsDatagramPeer[].class);
    /** Hands send completions on after releasing the peer each held; the poll's thread only. */
    private final ReleasingSink releasing = new ReleasingSink();
    /** Resolves in progress by their id's address (manager thread). */
    private final Map<Long, Pending> resolves = new HashMap<>();
    /** Joins in progress by their token, the context given to rdma_join_multicast (manager thread). */
    private final Map<Long, Pending> joins = new HashMap<>();
    private final Map<InetAddress, VerbsDatagramPeer> groups = new HashMap<>();
    private long nextToken = 1;
    private volatile boolean closed;

    private record SenderKey(InetAddress address, int qpn) {
    }

    private record Pending(InetSocketAddress remote, Resolved done) {
    }

    VerbsDatagramQueuePair(VerbsConnectionManager manager, MemorySegment channel, InetSocketAddress bind,
                           CompletionChannel completions, int sendDepth, int recvDepth) {
        this.manager = manager;
        this.device = manager.device;
        this.sendDepth = sendDepth;
        this.inFlight = new VerbsDatagramPeer[sendDepth];
        InetAddress ip = bind.getAddress();
        if (ip.isAnyLocalAddress()) {
            throw new IllegalArgumentException("a datagram endpoint on verbs binds to an IP address of "
                    + device.name() + ", not to " + ip.getHostAddress());
        }
        int[] port = new int[1];
        this.sgidIndex = gidIndexOf(ip, port);
        this.portNum = port[0];
        this.maxMessage = PortInfo.mtuBytes(device.info().ports().get(portNum - 1).activeMtu());
        MemorySegment lid = MemorySegment.NULL;
        MemorySegment qid = MemorySegment.NULL;
        VerbsCompletionQueue made = null;
        try (Arena a = Arena.ofConfined()) {
            lid = LibRdmacm.createId(channel, RdmaCmId.PS_UDP, a);
            LibRdmacm.bindAddr(lid, SockAddr.of(bind, a));
            checkDevice(lid, bind);
            LibRdmacm.listen(lid, 128);
            qid = LibRdmacm.createId(channel, RdmaCmId.PS_UDP, a);
            LibRdmacm.bindAddr(qid, SockAddr.of(new InetSocketAddress(ip, 0), a));
            checkDevice(qid, bind);
            made = (VerbsCompletionQueue) device.createCompletionQueue(sendDepth + recvDepth, completions);
            MemorySegment init = a.allocate(IbvQpInitAttr.LAYOUT);
            IbvQpInitAttr.set(init, made.cq, made.cq, MemorySegment.NULL, sendDepth, recvDepth, 1, 1, 0, IbvQp.QPT_UD, false);
            MemorySegment q = LibRdmacm.createQp(qid, device.pd, init);
            this.qp = q.reinterpret(IbvQp.LAYOUT.byteSize());
        } catch (RuntimeException e) {
            if (!qid.equals(MemorySegment.NULL)) {
                LibRdmacm.destroyId(qid);
            }
            if (made != null) {
                made.close();
            }
            if (!lid.equals(MemorySegment.NULL)) {
                LibRdmacm.destroyId(lid);
            }
            arena.close();
            throw e;
        }
        this.listenId = lid;
        this.qpId = qid;
        this.cq = made;
        this.qpNum = IbvQp.qpNum(qp);
        this.local = SockAddr.toInet(RdmaCmId.srcAddr(lid));
        this.postSendFn = IbvContext.postSendFn(device.context);
        this.postRecvFn = IbvContext.postRecvFn(device.context);
    }

    private void checkDevice(MemorySegment id, InetSocketAddress bind) {
        if (RdmaCmId.verbs(id).address() != device.context.address()) {
            throw new RdmaException(bind.getAddress().getHostAddress() + " is not an address of " + device.name()
                    + ": bind the datagram endpoint to one of its addresses");
        }
    }

    /** The RoCE v2 GID of {@code ip} on this device (its index; its port into {@code port[0]}). */
    private int gidIndexOf(InetAddress ip, int[] port) {
        for (PortInfo p : device.info().ports()) {
            for (GidInfo g : p.gids()) {
                if (g.roceV2() && ip.equals(g.ipAddress())) {
                    port[0] = p.port();
                    return g.index();
                }
            }
        }
        throw new RdmaException(ip.getHostAddress() + " is not the address of a RoCE v2 GID of " + device.name()
                + ": bind the datagram endpoint to one of its addresses");
    }

    MemorySegment listenId() {
        return listenId;
    }

    MemorySegment qpId() {
        return qpId;
    }

    @Override
    public int headerBytes() {
        return GRH;
    }

    @Override
    public int maxMessageSize() {
        return maxMessage;
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
    }

    @Override
    public int sendDepth() {
        return sendDepth;
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        if (closed) {
            return Errno.EINVAL;
        }
        IbvSge.set(recvSge, localAddr, length, lkey);
        IbvRecvWr.set(recvWr, wrId | VerbsCompletionQueue.RECEIVE_BIT, recvSge, 1);
        return LibIbverbs.postRecv(postRecvFn, qp, recvWr, badRecv);
    }

    @Override
    public int postSend(long wrId, long localAddr, int length, int lkey, DatagramPeer to) {
        if (closed || !(to instanceof VerbsDatagramPeer p) || p.owner != this || p.left || wrId < 0 || wrId >= sendDepth) {
            return Errno.EINVAL;
        }
        int slot = (int) wrId;
        if (p.sender) {
            if (!p.hold()) {
                return ESTALE;   // evicted, its handle gone or going: the endpoint renews it
            }
            IN_FLIGHT.setRelease(inFlight, slot, p);
        }
        IbvSge.set(sendSge, localAddr, length, lkey);
        IbvSendWr.set(sendWr, wrId, sendSge, length == 0 ? 0 : 1, IbvSendWr.WR_SEND, IbvSendWr.SEND_SIGNALED);
        IbvSendWr.ud(sendWr, p.ah, p.qpn, p.qkey);
        int rc = LibIbverbs.postSend(postSendFn, qp, sendWr, badSend);
        if (rc != 0 && p.sender) {
            IN_FLIGHT.setRelease(inFlight, slot, null);
            p.release();
        }
        return rc;
    }

    @Override
    public int poll(Sink sink, int max) {
        releasing.next = sink;
        return cq.pollDatagrams(releasing, max, GRH);
    }

    /** Releases the peer a completed send held, then tells the endpoint. */
    private final class ReleasingSink implements Sink {
        Sink next;

        @Override
        public void onSend(long wrId, int status) {
            if (wrId >= 0 && wrId < sendDepth) {
                VerbsDatagramPeer p = (VerbsDatagramPeer) IN_FLIGHT.getAndSet(inFlight, (int) wrId, (VerbsDatagramPeer) null);
                if (p != null) {
                    p.release();
                }
            }
            next.onSend(wrId, status);
        }

        @Override
        public void onReceive(long wrId, int status, int byteLen, int sourceQp) {
            next.onReceive(wrId, status, byteLen, sourceQp);
        }
    }

    @Override
    public void arm() {
        cq.arm();
    }

    @Override
    public DatagramPeer sourceOf(MemorySegment header, int sourceQp, int maxPeers) {
        InetAddress from = sourceIp(header);
        if (from == null) {
            return null;
        }
        SenderKey key = new SenderKey(from, sourceQp);
        synchronized (this) {
            if (closed) {
                return null;
            }
            VerbsDatagramPeer p = senders.seen(key);
            return p != null ? p : senders.add(key, senderPeer(from, sourceQp), maxPeers);
        }
    }

    @Override
    public synchronized DatagramPeer renew(DatagramPeer stale, int maxPeers) {
        if (closed || !(stale instanceof VerbsDatagramPeer s) || s.owner != this) {
            return null;
        }
        if (!s.sender) {
            return s;   // resolved and group peers are never evicted
        }
        SenderKey key = new SenderKey(s.address().getAddress(), s.qpn);
        VerbsDatagramPeer p = senders.seen(key);
        return p != null ? p : senders.add(key, senderPeer(key.address(), key.qpn()), maxPeers);
    }

    @Override
    public synchronized int senders() {
        return senders.size();
    }

    @Override
    public synchronized long sendersEvicted() {
        return senders.evicted();
    }

    /** A new address handle for the sender at {@code from}, QP {@code sourceQp}; under this. */
    private VerbsDatagramPeer senderPeer(InetAddress from, int sourceQp) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(IbvQpAttr.AH_ATTR);
            byte[] gid = new byte[16];
            byte[] raw = from.getAddress();
            if (raw.length == 4) {
                gid[10] = (byte) 0xFF;
                gid[11] = (byte) 0xFF;
                System.arraycopy(raw, 0, gid, 12, 4);
            } else {
                gid = raw;
            }
            MemorySegment.copy(gid, 0, attr, ValueLayout.JAVA_BYTE, offset(IbvQpAttr.AH_ATTR, "grh.dgid"), 16);
            attr.set(ValueLayout.JAVA_BYTE, offset(IbvQpAttr.AH_ATTR, "grh.sgid_index"), (byte) sgidIndex);
            attr.set(ValueLayout.JAVA_BYTE, offset(IbvQpAttr.AH_ATTR, "grh.hop_limit"), (byte) 64);
            attr.set(ValueLayout.JAVA_BYTE, offset(IbvQpAttr.AH_ATTR, "is_global"), (byte) 1);
            attr.set(ValueLayout.JAVA_BYTE, offset(IbvQpAttr.AH_ATTR, "port_num"), (byte) portNum);
            return new VerbsDatagramPeer(this, LibIbverbs.createAh(device.pd, attr), new InetSocketAddress(from, 0),
                    sourceQp, UDP_QKEY, false, true);
        }
    }

    /**
     * The sender's IP address in a GRH: RoCE v2 over IPv4 leaves the first 20 bytes zero and
     * puts the IPv4 header in the last 20 (source at 32..35); over IPv6 (and RoCE v1) it is an
     * IPv6 header with the source GID at 8..23.
     */
    static InetAddress sourceIp(MemorySegment grh) {
        boolean ipv4 = true;
        for (int i = 0; i < 20 && ipv4; i++) {
            ipv4 = grh.get(ValueLayout.JAVA_BYTE, i) == 0;
        }
        try {
            if (ipv4 && (grh.get(ValueLayout.JAVA_BYTE, 20) >> 4 & 0xF) == 4) {
                return InetAddress.getByAddress(grh.asSlice(32, 4).toArray(ValueLayout.JAVA_BYTE));
            }
            InetAddress a = InetAddress.getByAddress(grh.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE));
            return a;   // an IPv4-mapped GID comes back as an Inet4Address
        } catch (UnknownHostException e) {
            return null;
        }
    }

    @Override
    public void resolve(InetSocketAddress remote, int timeoutMs, Resolved done) {
        if (closed) {
            done.done(null, "the endpoint is closed");
            return;
        }
        if ((remote.getAddress() instanceof Inet4Address) != (local.getAddress() instanceof Inet4Address)) {
            done.done(null, "an endpoint bound to " + local + " cannot reach " + remote + " (another address family)");
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = LibRdmacm.createId(manager.channel(), RdmaCmId.PS_UDP, a);
            resolves.put(id.address(), new Pending(remote, done));
            manager.adopt(id, this);
            try {
                LibRdmacm.resolveAddr(id, SockAddr.of(new InetSocketAddress(local.getAddress(), 0), a),
                        SockAddr.of(remote, a), timeoutMs);
            } catch (RuntimeException e) {
                resolves.remove(id.address());
                manager.forget(id);
                LibRdmacm.destroyId(id);
                done.done(null, e.getMessage());
            }
        }
    }

    @Override
    public void join(InetAddress group, Resolved done) {
        if (closed) {
            done.done(null, "the endpoint is closed");
            return;
        }
        if (groups.containsKey(group)) {
            done.done(null, "already a member of " + group.getHostAddress());
            return;
        }
        long token = nextToken++;
        joins.put(token, new Pending(new InetSocketAddress(group, 0), done));
        try (Arena a = Arena.ofConfined()) {
            LibRdmacm.joinMulticast(qpId, SockAddr.of(new InetSocketAddress(group, 0), a), MemorySegment.ofAddress(token));
        } catch (RuntimeException e) {
            joins.remove(token);
            done.done(null, e.getMessage());
        }
    }

    @Override
    public void leave(DatagramPeer group) {
        VerbsDatagramPeer p = groups.remove(group.address().getAddress());
        if (p == null) {
            return;
        }
        p.left = true;   // its address handle stays until close: a send posted before may still use it
        try (Arena a = Arena.ofConfined()) {
            LibRdmacm.leaveMulticast(qpId, SockAddr.of(new InetSocketAddress(p.address().getAddress(), 0), a));
        }
    }

    @Override
    public Runnable onEvent(MemorySegment event, int type, int status, MemorySegment id) {
        if (type == RdmaCmEvent.CONNECT_REQUEST) {
            return () -> answerSidr(id);
        }
        if (type == RdmaCmEvent.MULTICAST_JOIN || type == RdmaCmEvent.MULTICAST_ERROR) {
            Pending join = joins.remove(RdmaCmEvent.udContext(event));
            if (join == null) {
                return null;
            }
            if (type == RdmaCmEvent.MULTICAST_ERROR || status != 0) {
                return () -> join.done().done(null, RdmaCmEvent.name(type) + " (status " + status + ")");
            }
            VerbsDatagramPeer p = peer(RdmaCmEvent.udAhAttr(event), join.remote(), RdmaCmEvent.udQpNum(event),
                    RdmaCmEvent.udQkey(event), true);
            groups.put(join.remote().getAddress(), p);
            return () -> join.done().done(p, null);
        }
        Pending r = resolves.get(id.address());
        if (r == null) {
            return null;   // an event of the listening or the QP's id: nothing to do
        }
        switch (type) {
            case RdmaCmEvent.ADDR_RESOLVED -> {
                if (RdmaCmId.verbs(id).address() != device.context.address()) {
                    return endResolve(id, r, null, "the route to " + r.remote() + " leaves through another RDMA device, not "
                            + device.name());
                }
                return () -> {
                    try {
                        LibRdmacm.resolveRoute(id, 5000);
                    } catch (RuntimeException e) {
                        endResolve(id, r, null, e.getMessage()).run();
                    }
                };
            }
            case RdmaCmEvent.ROUTE_RESOLVED -> {
                return () -> {
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment param = a.allocate(RdmaConnParam.LAYOUT);
                        RdmaConnParam.set(param, MemorySegment.NULL, 0, 0, 0, 0, 0);
                        RdmaConnParam.qpNum(param, qpNum);
                        LibRdmacm.connect(id, param);   // the SIDR request
                    } catch (RuntimeException e) {
                        endResolve(id, r, null, e.getMessage()).run();
                    }
                };
            }
            case RdmaCmEvent.ESTABLISHED -> {
                VerbsDatagramPeer p;
                try {
                    p = peer(RdmaCmEvent.udAhAttr(event), r.remote(), RdmaCmEvent.udQpNum(event), RdmaCmEvent.udQkey(event), false);
                } catch (RuntimeException e) {
                    return endResolve(id, r, null, e.getMessage());
                }
                return endResolve(id, r, p, null);
            }
            default -> {
                return endResolve(id, r, null, RdmaCmEvent.name(type) + " (status " + status + ")"
                        + (type == RdmaCmEvent.UNREACHABLE || type == RdmaCmEvent.REJECTED
                        ? ": no datagram endpoint is bound there" : ""));
            }
        }
    }

    /** Ends a resolve: its id goes (after the event is acknowledged), and {@code done} is told. */
    private Runnable endResolve(MemorySegment id, Pending r, VerbsDatagramPeer peer, String error) {
        resolves.remove(id.address());
        manager.forget(id);
        return () -> {
            LibRdmacm.destroyId(id);
            r.done().done(peer, peer == null ? error : null);
        };
    }

    private void answerSidr(MemorySegment request) {
        try (Arena a = Arena.ofConfined()) {
            if (closed || RdmaCmId.verbs(request).address() != device.context.address()) {
                LibRdmacm.reject(request, MemorySegment.NULL, 0);
            } else {
                MemorySegment param = a.allocate(RdmaConnParam.LAYOUT);
                RdmaConnParam.set(param, MemorySegment.NULL, 0, 0, 0, 0, 0);
                RdmaConnParam.qpNum(param, qpNum);
                LibRdmacm.accept(request, param);   // the SIDR reply: this QP and its Q_Key
            }
        } catch (RuntimeException e) {
            // The requester's resolve fails by its own timeout; nothing here to undo.
        } finally {
            LibRdmacm.destroyId(request);
        }
    }

    private synchronized VerbsDatagramPeer peer(MemorySegment ahAttr, InetSocketAddress address, int qpn, int qkey, boolean group) {
        VerbsDatagramPeer p = new VerbsDatagramPeer(this, LibIbverbs.createAh(device.pd, ahAttr), address, qpn, qkey, group,
                false);
        peers.add(p);
        return p;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Map.Entry<Long, Pending> e : List.copyOf(resolves.entrySet())) {
            MemorySegment id = MemorySegment.ofAddress(e.getKey()).reinterpret(RdmaCmId.LAYOUT.byteSize());
            manager.forget(id);
            LibRdmacm.destroyId(id);
            e.getValue().done().done(null, "the endpoint closed");
        }
        resolves.clear();
        for (Pending j : joins.values()) {
            j.done().done(null, "the endpoint closed");
        }
        joins.clear();
        try (Arena a = Arena.ofConfined()) {
            for (InetAddress g : groups.keySet()) {
                try {
                    LibRdmacm.leaveMulticast(qpId, SockAddr.of(new InetSocketAddress(g, 0), a));
                } catch (RuntimeException e) {
                    // the id goes next anyway
                }
            }
        }
        groups.clear();
        manager.forget(listenId);
        manager.forget(qpId);
        LibRdmacm.destroyId(listenId);
        LibRdmacm.destroyQp(qpId);
        LibRdmacm.destroyId(qpId);
        synchronized (this) {
            // After the QP: no send can use them now, and none completes (the poll has stopped); before the PD.
            for (VerbsDatagramPeer p : peers) {
                p.destroy();
            }
            peers.clear();
            for (VerbsDatagramPeer p : senders.clear()) {
                p.destroy();
            }
            for (int i = 0; i < sendDepth; i++) {   // evicted senders whose sends were still in flight
                VerbsDatagramPeer p = (VerbsDatagramPeer) IN_FLIGHT.getAndSet(inFlight, i, (VerbsDatagramPeer) null);
                if (p != null) {
                    p.destroy();
                }
            }
        }
        cq.close();
        arena.close();
    }

    /**
     * An address handle with the QPN and Q_Key a send to it carries. A sender's is evictable: its
     * {@link AddressHandleUses} say when the handle may go (retired, and no send holds it).
     */
    static final class VerbsDatagramPeer implements DatagramPeer {
        private static final VarHandle DESTROYED;

        static {
            try {
                DESTROYED = MethodHandles.lookup().findVarHandle(VerbsDatagramPeer.class, "destroyed", boolean.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final VerbsDatagramQueuePair owner;
        final MemorySegment ah;
        private final InetSocketAddress address;
        final int qpn;
        final int qkey;
        private final boolean group;
        /** A sender's (in the table, evictable), not a resolve's or a group's. */
        final boolean sender;
        volatile boolean left;
        /** A sender's: the sends that hold it, and whether it was evicted. */
        final AddressHandleUses uses = new AddressHandleUses();
        @SuppressWarnings("unused")   // through DESTROYED
        private volatile boolean destroyed;

        VerbsDatagramPeer(VerbsDatagramQueuePair owner, MemorySegment ah, InetSocketAddress address, int qpn, int qkey,
                          boolean group, boolean sender) {
            this.owner = owner;
            this.ah = ah;
            this.address = address;
            this.qpn = qpn;
            this.qkey = qkey;
            this.group = group;
            this.sender = sender;
        }

        /** A send is about to use the handle: false once it is retired (nothing is posted then). */
        boolean hold() {
            return uses.hold();
        }

        /** A send that held it completed (or was not posted): the last one of a retired peer destroys it. */
        void release() {
            if (uses.release()) {
                destroy();
            }
        }

        /** Evicted from the table: no send holds it from now on, and the last one in flight destroys it. */
        void retire() {
            if (uses.retire()) {
                destroy();
            }
        }

        /** Destroys the handle, once, whoever asks (a close destroys every handle, whatever holds it). */
        void destroy() {
            if (DESTROYED.compareAndSet(this, false, true)) {
                try {
                    LibIbverbs.destroyAh(ah);
                } catch (RuntimeException e) {
                    // ibv_destroy_ah fails only for a handle the device no longer knows: nothing more to free
                    System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING, "destroying the address handle of "
                            + address + " failed", e);
                }
            }
        }

        @Override
        public InetSocketAddress address() {
            return address;
        }

        @Override
        public int queuePairNumber() {
            return qpn;
        }

        @Override
        public boolean group() {
            return group;
        }
    }
}
