package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One side of an RC connection at the level of the bindings: an rdma_cm id with its PD, CQ and
 * QP, registered buffers, and helpers that post one work request and wait for its completion
 * with a deadline. Test code: it checks every return value by assertion.
 */
final class RcEndpoint implements AutoCloseable {
    static final int QUEUE_DEPTH = 64;

    final Arena arena = Arena.ofConfined();
    final MemorySegment channel;
    MemorySegment id;
    MemorySegment context;
    MemorySegment pd;
    MemorySegment cq;
    MemorySegment qp;
    /** Set before {@link #createQp}: a completion channel for the CQ (event mode). */
    boolean useCompChannel;
    /** Set before {@link #createQp}: receives come from a shared receive queue. */
    boolean useSrq;
    /** Set before {@link #createQp}: the QP's type (UD for datagrams; rdma_cm then moves it to RTS itself). */
    int qpType = IbvQp.QPT_RC;
    MemorySegment compChannel;
    MemorySegment srq;
    private final List<MemorySegment> mrs = new ArrayList<>();
    private final MemorySegment wcs = arena.allocate(IbvWc.LAYOUT, 16);
    /** The last completion polled, whole (a UD reply's address handle is made from it). */
    final MemorySegment lastWc = arena.allocate(IbvWc.LAYOUT);
    private final MemorySegment sendWr = arena.allocate(IbvSendWr.LAYOUT);
    private final MemorySegment recvWr = arena.allocate(IbvRecvWr.LAYOUT);
    private final MemorySegment sge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment badWr = arena.allocate(ValueLayout.ADDRESS);
    private final MemorySegment pollfd = arena.allocate(LibC.POLLFD);
    private MemorySegment postSendFn;
    private MemorySegment postRecvFn;
    private MemorySegment pollCqFn;

    RcEndpoint() {
        channel = LibRdmacm.createEventChannel();
        LibC.setNonBlocking(LibRdmacm.eventChannelFd(channel));
    }

    /** A completion as read from the CQ. */
    record Wc(long wrId, int status, int opcode, int byteLen, int wcFlags, int imm, int srcQp) {
        String statusName() {
            return IbvWc.statusName(status);
        }
    }

    /**
     * A connection event, copied out before the event is acknowledged; for UD events (a UDP id's
     * ESTABLISHED, MULTICAST_JOIN) also {@code param.ud}: the AH attributes (copied), QPN and Q_Key.
     */
    record CmEvent(int type, int status, MemorySegment id, byte[] privateData, int responderResources,
                   int initiatorDepth, MemorySegment udAhAttr, int udQpn, int udQkey) {
    }

    /** Waits up to {@code timeoutMs} for the next rdma_cm event on this endpoint's channel. */
    CmEvent awaitCmEvent(int timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        int fd = LibRdmacm.eventChannelFd(channel);
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            assertTrue(left > 0, "no rdma_cm event within " + timeoutMs + " ms");
            if (!LibC.pollIn(fd, (int) left, pollfd)) {
                continue;
            }
            try (Arena a = Arena.ofConfined()) {
                MemorySegment event = LibRdmacm.getCmEvent(channel, a);
                MemorySegment conn = RdmaCmEvent.conn(event);
                MemorySegment ah = arena.allocate(IbvQpAttr.AH_ATTR);
                ah.copyFrom(RdmaCmEvent.udAhAttr(event));
                CmEvent copy = new CmEvent(RdmaCmEvent.event(event), RdmaCmEvent.status(event),
                        RdmaCmEvent.id(event).reinterpret(RdmaCmId.LAYOUT.byteSize()),
                        RdmaCmEvent.privateData(event), RdmaConnParam.responderResources(conn),
                        RdmaConnParam.initiatorDepth(conn), ah, RdmaCmEvent.udQpNum(event), RdmaCmEvent.udQkey(event));
                LibRdmacm.ackCmEvent(event);
                return copy;
            }
        }
    }

    CmEvent expect(int type, int timeoutMs) {
        CmEvent e = awaitCmEvent(timeoutMs);
        assertEquals(RdmaCmEvent.name(type), RdmaCmEvent.name(e.type()),
                "rdma_cm event (status " + e.status() + ")");
        return e;
    }

    /** PD, CQ and QP on the id's device; rdma_cm moves the QP to RTS during connect/accept. */
    void createQp() {
        context = RdmaCmId.verbs(id);
        assertTrue(!context.equals(MemorySegment.NULL), "the id is bound to a device");
        pd = LibIbverbs.allocPd(context);
        compChannel = useCompChannel ? LibIbverbs.createCompChannel(context) : MemorySegment.NULL;
        cq = LibIbverbs.createCq(context, QUEUE_DEPTH * 2, compChannel, 0);
        if (useSrq) {
            MemorySegment srqInit = arena.allocate(IbvSrqInitAttr.LAYOUT);
            IbvSrqInitAttr.set(srqInit, QUEUE_DEPTH, 1);
            srq = LibIbverbs.createSrq(pd, srqInit);
        } else {
            srq = MemorySegment.NULL;
        }
        MemorySegment init = arena.allocate(IbvQpInitAttr.LAYOUT);
        IbvQpInitAttr.set(init, cq, cq, srq, QUEUE_DEPTH, useSrq ? 0 : QUEUE_DEPTH, 1, useSrq ? 0 : 1, 0,
                qpType, false);
        qp = LibRdmacm.createQp(id, pd, init).reinterpret(IbvQp.LAYOUT.byteSize());
        assertTrue(IbvQpInitAttr.maxSendWr(init) >= QUEUE_DEPTH, "granted send queue depth");
        postSendFn = IbvContext.postSendFn(context);
        postRecvFn = IbvContext.postRecvFn(context);
        pollCqFn = IbvContext.pollCqFn(context);
    }

    /** A conn param offering the device's RDMA read/atomic depth (rxe: 128, capped to a u8). */
    MemorySegment connParam(byte[] privateData) {
        MemorySegment p = arena.allocate(RdmaConnParam.LAYOUT);
        MemorySegment data = MemorySegment.NULL;
        if (privateData != null && privateData.length > 0) {
            data = arena.allocate(privateData.length);
            data.copyFrom(MemorySegment.ofArray(privateData));
        }
        MemorySegment attr = arena.allocate(IbvDeviceAttr.LAYOUT);
        LibIbverbs.queryDevice(context, attr);
        int depth = Math.min(255, IbvDeviceAttr.intField(attr, "max_qp_rd_atom"));
        RdmaConnParam.set(p, data, privateData == null ? 0 : privateData.length, depth, depth, 7, 6);
        return p;
    }

    /** Registers {@code size} zeroed bytes with {@code access}. */
    MemorySegment register(long size, int access) {
        MemorySegment buf = arena.allocate(size, 64);
        MemorySegment mr = LibIbverbs.regMr(pd, buf, access);
        mrs.add(mr);
        return mr;
    }

    static MemorySegment bytes(MemorySegment mr) {
        return MemorySegment.ofAddress(IbvMr.addr(mr)).reinterpret(IbvMr.length(mr));
    }

    /** Posts one receive of the whole of {@code mr}; returns the provider's code. */
    int postRecv(long wrId, MemorySegment mr) {
        IbvSge.set(sge, IbvMr.addr(mr), (int) IbvMr.length(mr), IbvMr.lkey(mr));
        IbvRecvWr.set(recvWr, wrId, sge, 1);
        return LibIbverbs.postRecv(postRecvFn, qp, recvWr, badWr);
    }

    /** Posts one receive of the whole of {@code mr} to the shared receive queue. */
    int postSrqRecv(long wrId, MemorySegment mr) {
        IbvSge.set(sge, IbvMr.addr(mr), (int) IbvMr.length(mr), IbvMr.lkey(mr));
        IbvRecvWr.set(recvWr, wrId, sge, 1);
        return LibIbverbs.postSrqRecv(IbvContext.postSrqRecvFn(IbvSrq.context(srq)), srq, recvWr, badWr);
    }

    /** Arms the CQ for one completion event. */
    int reqNotify() {
        return LibIbverbs.reqNotifyCq(IbvContext.reqNotifyCqFn(context), cq, false);
    }

    /** Waits up to {@code timeoutMs} for a completion event; returns the CQ it names, acknowledged. */
    MemorySegment awaitCqEvent(int timeoutMs) {
        int fd = IbvCompChannel.fd(compChannel);
        assertTrue(LibC.pollIn(fd, timeoutMs, pollfd), "a completion event within " + timeoutMs + " ms");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment eventCq = LibIbverbs.getCqEvent(compChannel, a);
            LibIbverbs.ackCqEvents(eventCq, 1);
            return eventCq;
        }
    }

    /** Posts one signaled send-queue request; returns the provider's code. */
    int postSend(long wrId, int opcode, MemorySegment mr, long offset, int length, long remoteAddr, int rkey,
                 int imm, long compareAdd, long swap) {
        IbvSge.set(sge, IbvMr.addr(mr) + offset, length, IbvMr.lkey(mr));
        IbvSendWr.set(sendWr, wrId, sge, 1, opcode, IbvSendWr.SEND_SIGNALED);
        IbvSendWr.immData(sendWr, imm);
        if (opcode == IbvSendWr.WR_ATOMIC_CMP_AND_SWP || opcode == IbvSendWr.WR_ATOMIC_FETCH_AND_ADD) {
            IbvSendWr.atomic(sendWr, remoteAddr, rkey, compareAdd, swap);
        } else {
            IbvSendWr.rdma(sendWr, remoteAddr, rkey);
        }
        return LibIbverbs.postSend(postSendFn, qp, sendWr, badWr);
    }

    /** Posts a signaled IBV_WR_BIND_MW: type 2 window {@code mw} gets {@code rkey} over {@code [addr, addr + length)} of {@code mr}. */
    int postBindMw(long wrId, MemorySegment mw, int rkey, MemorySegment mr, long addr, long length, int access) {
        IbvSendWr.set(sendWr, wrId, MemorySegment.NULL, 0, IbvSendWr.WR_BIND_MW, IbvSendWr.SEND_SIGNALED);
        IbvSendWr.immData(sendWr, 0);   // shares its word with invalidate_rkey; rxe refuses a bind with it set (EINVAL)
        IbvSendWr.bindMw(sendWr, mw, rkey, mr, addr, length, access);
        return LibIbverbs.postSend(postSendFn, qp, sendWr, badWr);
    }

    /** Posts a signaled IBV_WR_LOCAL_INV of {@code rkey}. */
    int postLocalInv(long wrId, int rkey) {
        IbvSendWr.set(sendWr, wrId, MemorySegment.NULL, 0, IbvSendWr.WR_LOCAL_INV, IbvSendWr.SEND_SIGNALED);
        IbvSendWr.invalidateRkey(sendWr, rkey);
        return LibIbverbs.postSend(postSendFn, qp, sendWr, badWr);
    }

    /** Posts one signaled UD send of {@code length} bytes of {@code mr} to the QP {@code qpn} behind {@code ah}. */
    int postUdSend(long wrId, MemorySegment mr, int length, MemorySegment ah, int qpn, int qkey) {
        IbvSge.set(sge, IbvMr.addr(mr), length, IbvMr.lkey(mr));
        IbvSendWr.set(sendWr, wrId, sge, 1, IbvSendWr.WR_SEND, IbvSendWr.SEND_SIGNALED);
        IbvSendWr.ud(sendWr, ah, qpn, qkey);
        return LibIbverbs.postSend(postSendFn, qp, sendWr, badWr);
    }

    /** Polls until {@code n} completions arrived or {@code timeoutMs} passed; returns them in order. */
    List<Wc> poll(int n, int timeoutMs) {
        List<Wc> got = new ArrayList<>();
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (got.size() < n) {
            int k = LibIbverbs.pollCq(pollCqFn, cq, Math.min(16, n - got.size()), wcs);
            assertTrue(k >= 0, "ibv_poll_cq returned " + k);
            for (int i = 0; i < k; i++) {
                got.add(new Wc(IbvWc.wrId(wcs, i), IbvWc.status(wcs, i), IbvWc.opcode(wcs, i),
                        IbvWc.byteLen(wcs, i), IbvWc.wcFlags(wcs, i), IbvWc.immData(wcs, i), IbvWc.srcQp(wcs, i)));
                lastWc.copyFrom(wcs.asSlice((long) i * IbvWc.SIZE, IbvWc.SIZE));
            }
            if (k == 0) {
                assertTrue(System.nanoTime() < deadline,
                        "only " + got.size() + " of " + n + " completions within " + timeoutMs + " ms: " + got);
                Thread.onSpinWait();
            }
        }
        return got;
    }

    /** Polls for {@code timeoutMs} more and says how many extra completions came (should be none). */
    int drainExtra(int timeoutMs) {
        int extra = 0;
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (System.nanoTime() < deadline) {
            extra += Math.max(0, LibIbverbs.pollCq(pollCqFn, cq, 16, wcs));
        }
        return extra;
    }

    Wc pollOne(int timeoutMs) {
        return poll(1, timeoutMs).getFirst();
    }

    /** The QP state as the device reports it (ibv_query_qp). */
    int queryState() {
        MemorySegment attr = arena.allocate(IbvQpAttr.LAYOUT);
        MemorySegment init = arena.allocate(IbvQpInitAttr.LAYOUT);
        LibIbverbs.queryQp(qp, attr, IbvQpAttr.STATE, init);
        return IbvQpAttr.qpState(attr);
    }

    void moveToError() {
        MemorySegment attr = arena.allocate(IbvQpAttr.LAYOUT);
        IbvQpAttr.qpState(attr, IbvQp.QPS_ERR);
        LibIbverbs.modifyQp(qp, attr, IbvQpAttr.STATE);
    }

    @Override
    public void close() {
        if (qp != null) {
            LibRdmacm.destroyQp(id);
        }
        for (MemorySegment mr : mrs) {
            LibIbverbs.deregMr(mr);
        }
        if (srq != null && !srq.equals(MemorySegment.NULL)) {
            LibIbverbs.destroySrq(srq);
        }
        if (cq != null) {
            LibIbverbs.destroyCq(cq);
        }
        if (compChannel != null && !compChannel.equals(MemorySegment.NULL)) {
            LibIbverbs.destroyCompChannel(compChannel);
        }
        if (pd != null) {
            LibIbverbs.deallocPd(pd);
        }
        if (id != null) {
            LibRdmacm.destroyId(id);
        }
        LibRdmacm.destroyEventChannel(channel);
        arena.close();
    }
}
