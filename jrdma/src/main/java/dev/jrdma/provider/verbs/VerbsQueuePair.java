package dev.jrdma.provider.verbs;

import dev.jrdma.os.AddressSpace;
import dev.jrdma.provider.verbs.ffi.DataPathVerbs;
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
 * An RC {@code ibv_qp} made by {@code rdma_create_qp}. An array of send work requests (one per
 * send-queue entry, each with its SGE), one receive request and the bad-wr slot are allocated
 * once and refilled per post, by address ({@link AddressSpace}): posting allocates nothing and
 * checks nothing twice, and so is not thread-safe (the API layer serialises posts per
 * connection). A chain is the first {@code n} of the array linked by
 * {@code next}, posted with one {@code ibv_post_send}: one doorbell.
 */
final class VerbsQueuePair implements QueuePair {
    private final MemorySegment qp;
    private final int qpNum;
    private final QueuePairSpec granted;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final Arena arena = Arena.ofShared();
    private final int chainCapacity;
    private final MemorySegment sendWrs;
    private final MemorySegment sendSges;
    /** Views of each request and SGE, made once, for the control requests (a window's bind). */
    private final MemorySegment[] wrAt;
    private final MemorySegment[] sgeAt;
    private final MemorySegment recvWr = arena.allocate(IbvRecvWr.LAYOUT);
    private final MemorySegment recvSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment badWr = arena.allocate(ValueLayout.ADDRESS);
    /**
     * The same memory by address, for the hot path (see {@link AddressSpace}): the arena lives
     * until {@link #release}, after the QP is destroyed and nothing posts any more.
     */
    private final long qpAddr;
    private final long sendWrsAddr;
    private final long sendSgesAddr;
    private final long badWrAddr;
    private final long recvWrAddr = recvWr.address();

    VerbsQueuePair(MemorySegment qp, MemorySegment context, MemorySegment grantedInit, QueuePairSpec asked) {
        this.qp = qp.reinterpret(IbvQp.LAYOUT.byteSize());
        this.qpNum = IbvQp.qpNum(this.qp);
        this.granted = new QueuePairSpec(IbvQpInitAttr.maxSendWr(grantedInit), IbvQpInitAttr.maxRecvWr(grantedInit),
                asked.maxSendSge(), asked.maxRecvSge(), IbvQpInitAttr.maxInlineData(grantedInit),
                asked.responderResources(), asked.initiatorDepth(), asked.retryCount(), asked.rnrRetry(),
                asked.ackTimeout(), asked.minRnrTimer(), asked.trafficClass(), asked.serviceLevel(), asked.flowLabel());
        this.postSendFn = IbvContext.postSendFn(context);
        this.postRecvFn = IbvContext.postRecvFn(context);
        this.chainCapacity = Math.max(1, granted.sendDepth());
        this.sendWrs = arena.allocate(IbvSendWr.LAYOUT, chainCapacity);
        this.sendSges = arena.allocate(IbvSge.LAYOUT, chainCapacity);
        this.wrAt = new MemorySegment[chainCapacity];
        this.sgeAt = new MemorySegment[chainCapacity];
        this.qpAddr = this.qp.address();
        this.sendWrsAddr = sendWrs.address();
        this.sendSgesAddr = sendSges.address();
        this.badWrAddr = badWr.address();
        for (int i = 0; i < chainCapacity; i++) {
            wrAt[i] = sendWrs.asSlice(i * IbvSendWr.SIZE, IbvSendWr.LAYOUT);
            sgeAt[i] = sendSges.asSlice(i * IbvSge.LAYOUT.byteSize(), IbvSge.LAYOUT);
            IbvSendWr.presetAt(wrAddr(i), sgeAddr(i));
        }
    }

    private long wrAddr(int index) {
        return sendWrsAddr + index * IbvSendWr.SIZE;
    }

    private long sgeAddr(int index) {
        return sendSgesAddr + index * IbvSge.LAYOUT.byteSize();
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
        stage(0, wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
        return postStaged(1);
    }

    @Override
    public int chainCapacity() {
        return chainCapacity;
    }

    @Override
    public void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey,
                      long remoteAddr, int rkey, long compareAdd, long swap, int imm) {
        if (opcode == WR_BIND_MW) {   // a control request (toRemoteFor): the segments made here do not matter
            MemorySegment wr = wrAt[index];
            IbvSendWr.set(wr, wrId, sgeAt[index], 0, opcode, flags);   // sg_list as preset
            IbvSendWr.immData(wr, 0);   // rxe refuses a bind whose imm_data (left by an earlier request here) is not 0
            IbvSendWr.bindMw(wr, MemorySegment.ofAddress(remoteAddr), rkey, MemorySegment.ofAddress(compareAdd),
                    localAddr, Integer.toUnsignedLong(length), (int) swap);
            return;
        }
        long wr = wrAddr(index);
        IbvSge.setAt(sgeAddr(index), localAddr, length, lkey);
        IbvSendWr.setAt(wr, wrId, length == 0 ? 0 : 1, opcode, flags);
        if (opcode == WR_ATOMIC_CMP_AND_SWP || opcode == WR_ATOMIC_FETCH_AND_ADD) {
            IbvSendWr.atomicAt(wr, remoteAddr, rkey, compareAdd, swap);
        } else {
            IbvSendWr.rdmaAt(wr, remoteAddr, rkey, imm);
        }
    }

    @Override
    public int postStaged(int count) {
        for (int i = 0; i < count - 1; i++) {
            IbvSendWr.nextAt(wrAddr(i), wrAddr(i + 1));
        }
        IbvSendWr.nextAt(wrAddr(count - 1), 0);
        return DataPathVerbs.postSend(postSendFn, qpAddr, sendWrsAddr, badWrAddr);
    }

    @Override
    public int firstUnposted() {
        long bad = badWr.get(ValueLayout.ADDRESS, 0).address();
        if (bad == 0) {
            return 0;
        }
        return (int) ((bad - sendWrs.address()) / IbvSendWr.LAYOUT.byteSize());
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        IbvSge.set(recvSge, localAddr, length, lkey);
        IbvRecvWr.set(recvWr, wrId, recvSge, 1);
        return DataPathVerbs.postRecv(postRecvFn, qpAddr, recvWrAddr, badWrAddr);
    }

    @Override
    public int queryState() {
        return query(IbvQpAttr.STATE, IbvQpAttr::qpState);
    }

    @Override
    public int queryAckTimeout() {
        return query(IbvQpAttr.TIMEOUT, IbvQpAttr::timeout);
    }

    @Override
    public int queryRetryCount() {
        return query(IbvQpAttr.RETRY_CNT, IbvQpAttr::retryCnt);
    }

    @Override
    public int queryPort() {
        return query(IbvQpAttr.PORT, IbvQpAttr::portNum);
    }

    @Override
    public int queryRnrRetry() {
        return query(IbvQpAttr.RNR_RETRY, IbvQpAttr::rnrRetry);
    }

    @Override
    public int queryMinRnrTimer() {
        return query(IbvQpAttr.MIN_RNR_TIMER, IbvQpAttr::minRnrTimer);
    }

    @Override
    public int queryTrafficClass() {
        return query(IbvQpAttr.AV, IbvQpAttr::trafficClass);
    }

    @Override
    public int queryServiceLevel() {
        return query(IbvQpAttr.AV, IbvQpAttr::serviceLevel);
    }

    @Override
    public int queryFlowLabel() {
        return query(IbvQpAttr.AV, IbvQpAttr::flowLabel);
    }

    /** One attribute as the device reports it now ({@code ibv_query_qp} with {@code mask}). */
    private int query(int mask, java.util.function.ToIntFunction<MemorySegment> field) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(IbvQpAttr.LAYOUT);
            LibIbverbs.queryQp(qp, attr, mask, a.allocate(IbvQpInitAttr.LAYOUT));
            return field.applyAsInt(attr);
        }
    }

    /**
     * The spec's minimum RNR timer, if it has one: an RTS to RTS change, as rdma_cm sets its own
     * (0, 655 ms) on the way to RTR and has no option for it. So it is made once the QP is in RTS:
     * after {@code rdma_accept} on the passive side, at ESTABLISHED on the active one.
     */
    void applyMinRnrTimer() {
        if (granted.minRnrTimer() >= 0) {
            modify(IbvQpAttr.MIN_RNR_TIMER, attr -> IbvQpAttr.minRnrTimer(attr, granted.minRnrTimer()));
        }
    }

    @Override
    public void moveToError() {
        modify(IbvQpAttr.STATE, attr -> IbvQpAttr.qpState(attr, IbvQp.QPS_ERR));
    }

    /** {@code ibv_modify_qp} of the attributes in {@code mask}, which {@code set} fills in. */
    private void modify(int mask, java.util.function.Consumer<MemorySegment> set) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(IbvQpAttr.LAYOUT);
            set.accept(attr);
            LibIbverbs.modifyQp(qp, attr, mask);
        }
    }

    /** Frees the request buffers; the QP itself goes with rdma_destroy_qp. */
    void release() {
        arena.close();
    }
}
