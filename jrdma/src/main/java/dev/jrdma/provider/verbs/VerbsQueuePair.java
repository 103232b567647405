package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.IbvContext;
import dev.jrdma.provider.verbs.ffi.IbvQp;
import dev.jrdma.provider.verbs.ffi.IbvQpAttr;
import dev.jrdma.provider.verbs.ffi.IbvQpInitAttr;
import dev.jrdma.provider.verbs.ffi.IbvRecvWr;
import dev.jrdma.provider.verbs.ffi.IbvSendWr;
import dev.jrdma.provider.verbs.ffi.IbvSge;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * An RC {@code ibv_qp} made by {@code rdma_create_qp}. One work request, one SGE and the bad-wr
 * slot are allocated once and refilled per post: posting allocates nothing, and so is not
 * thread-safe (the API layer serialises posts per connection).
 */
final class VerbsQueuePair implements QueuePair {
    private final MemorySegment qp;
    private final int qpNum;
    private final QueuePairSpec granted;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment sendWr = arena.allocate(IbvSendWr.LAYOUT);
    private final MemorySegment recvWr = arena.allocate(IbvRecvWr.LAYOUT);
    private final MemorySegment sendSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment recvSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment badWr = arena.allocate(ValueLayout.ADDRESS);

    VerbsQueuePair(MemorySegment qp, MemorySegment context, MemorySegment grantedInit, QueuePairSpec asked) {
        this.qp = qp.reinterpret(IbvQp.LAYOUT.byteSize());
        this.qpNum = IbvQp.qpNum(this.qp);
        this.granted = new QueuePairSpec(IbvQpInitAttr.maxSendWr(grantedInit), IbvQpInitAttr.maxRecvWr(grantedInit),
                asked.maxSendSge(), asked.maxRecvSge(), IbvQpInitAttr.maxInlineData(grantedInit),
                asked.responderResources(), asked.initiatorDepth(), asked.retryCount(), asked.rnrRetry());
        this.postSendFn = IbvContext.postSendFn(context);
        this.postRecvFn = IbvContext.postRecvFn(context);
    }

    @Override
    public int qpNum() {
        return qpNum;
    }

    @Override
    public QueuePairSpec granted() {
        return granted;
    }

    @Override
    public int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                        int rkey, long compareAdd, long swap, int imm) {
        IbvSge.set(sendSge, localAddr, length, lkey);
        IbvSendWr.set(sendWr, wrId, sendSge, length == 0 ? 0 : 1, opcode, flags);
        if (opcode == WR_ATOMIC_CMP_AND_SWP || opcode == WR_ATOMIC_FETCH_AND_ADD) {
            IbvSendWr.atomic(sendWr, remoteAddr, rkey, compareAdd, swap);
        } else {
            IbvSendWr.rdma(sendWr, remoteAddr, rkey);
            IbvSendWr.immData(sendWr, imm);
        }
        return LibIbverbs.postSend(postSendFn, qp, sendWr, badWr);
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        IbvSge.set(recvSge, localAddr, length, lkey);
        IbvRecvWr.set(recvWr, wrId, recvSge, 1);
        return LibIbverbs.postRecv(postRecvFn, qp, recvWr, badWr);
    }

    @Override
    public int queryState() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(IbvQpAttr.LAYOUT);
            LibIbverbs.queryQp(qp, attr, IbvQpAttr.STATE, a.allocate(IbvQpInitAttr.LAYOUT));
            return IbvQpAttr.qpState(attr);
        }
    }

    @Override
    public void moveToError() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(IbvQpAttr.LAYOUT);
            IbvQpAttr.qpState(attr, IbvQp.QPS_ERR);
            LibIbverbs.modifyQp(qp, attr, IbvQpAttr.STATE);
        }
    }

    /** Frees the request buffers; the QP itself goes with rdma_destroy_qp. */
    void release() {
        arena.close();
    }
}
