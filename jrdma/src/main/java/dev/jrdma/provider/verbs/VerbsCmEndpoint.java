package dev.jrdma.provider.verbs;

import dev.jrdma.exceptions.NativeRdmaException;
import dev.jrdma.provider.verbs.ffi.IbvQpInitAttr;
import dev.jrdma.provider.verbs.ffi.IbvQp;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.provider.verbs.ffi.RdmaCmId;
import dev.jrdma.provider.verbs.ffi.RdmaConnParam;
import dev.jrdma.os.SockAddr;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.SourceAddress;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.function.Consumer;

/** An rdma_cm id of a connection (outgoing, or accepted from a listener), with its QP. */
final class VerbsCmEndpoint implements CmEndpoint {
    final MemorySegment id;
    private final VerbsConnectionManager manager;
    private VerbsQueuePair qp;
    private Object attachment;
    /** For an outgoing connect: what to create and send once the route is resolved. */
    CompletionQueue pendingCq;
    QueuePairSpec pendingSpec;
    byte[] pendingPrivateData;
    QueuePairOwner pendingOwner;
    int timeoutMs;
    private boolean disconnectSent;
    /** Volatile: an accepted connection may be released on its own IO thread, and the manager's sweeps read it. */
    private volatile boolean closed;
    /** When this accepted connection was accepted (its RTU awaited since); the manager's thread. */
    long acceptedAtNanos;
    private SourceAddress source;

    VerbsCmEndpoint(VerbsConnectionManager manager, MemorySegment id) {
        this.manager = manager;
        this.id = id.reinterpret(RdmaCmId.LAYOUT.byteSize());
    }

    @Override
    public QueuePair queuePair() {
        return qp;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return SockAddr.toInet(RdmaCmId.dstAddr(id));
    }

    @Override
    public InetSocketAddress localAddress() {
        return SockAddr.toInet(RdmaCmId.srcAddr(id));
    }

    /**
     * rdma_create_qp on this id with the device's PD; with the owner's shared receive queue, if
     * it has one (then the QP has no receive queue of its own).
     */
    void createQp(CompletionQueue cq, QueuePairSpec spec, QueuePairOwner owner) {
        MemorySegment cqSeg = ((VerbsCompletionQueue) cq).cq;
        Srq shared = owner.srq();
        MemorySegment srq = MemorySegment.NULL;
        if (shared != null) {
            if (!(shared instanceof VerbsSharedReceiveQueue v) || v.device.pd.address() != manager.device.pd.address()) {
                throw new IllegalArgumentException("the shared receive queue " + shared + " is not of "
                        + manager.device.name() + "'s protection domain");
            }
            srq = v.srq;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment init = a.allocate(IbvQpInitAttr.LAYOUT);
            IbvQpInitAttr.set(init, cqSeg, cqSeg, srq, spec.sendDepth(), shared != null ? 0 : spec.recvDepth(),
                    spec.maxSendSge(), shared != null ? 0 : spec.maxRecvSge(), spec.maxInlineData(), IbvQp.QPT_RC, false);
            MemorySegment raw = LibRdmacm.createQp(id, manager.device.pd, init);
            qp = new VerbsQueuePair(raw, manager.device.context, init, spec);
        }
    }

    /** A conn param for connect/accept, with {@code privateData}. */
    static void withConnParam(QueuePairSpec spec, byte[] privateData, java.util.function.Consumer<MemorySegment> use) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(RdmaConnParam.LAYOUT);
            MemorySegment data = MemorySegment.NULL;
            int len = privateData == null ? 0 : privateData.length;
            if (len > 0) {
                data = a.allocate(len);
                data.copyFrom(MemorySegment.ofArray(privateData));
            }
            RdmaConnParam.set(p, data, len, spec.responderResources(), spec.initiatorDepth(), spec.retryCount(),
                    spec.rnrRetry());
            use.accept(p);
        }
    }

    /** The spec's ack timeout, if it has one; before connect or accept, which apply it at RTS. */
    void applyAckTimeout(QueuePairSpec spec) {
        if (spec.ackTimeout() >= 0) {
            LibRdmacm.setAckTimeout(id, spec.ackTimeout());
        }
    }

    /** The spec's minimum RNR timer, once the QP is in RTS (see {@link VerbsQueuePair#applyMinRnrTimer}). */
    void applyMinRnrTimer() {
        qp.applyMinRnrTimer();
    }

    @Override
    public void accept(CompletionQueue cq, QueuePairSpec spec, byte[] privateData, QueuePairOwner owner) {
        createQp(cq, spec, owner);
        owner.onQueuePair(qp);
        applyAckTimeout(spec);
        withConnParam(spec, privateData, p -> LibRdmacm.accept(id, p));
        manager.awaitingRtu(this);
        applyMinRnrTimer();   // rdma_accept moved the QP to RTS
    }

    /** The peer's address without its port (whom the pending-handshake limits count); cached. */
    SourceAddress source() {
        SourceAddress s = source;
        if (s == null) {
            source = s = SourceAddress.of(remoteAddress().getAddress());
        }
        return s;
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void reject(byte[] privateData) {
        try (Arena a = Arena.ofConfined()) {
            int len = privateData == null ? 0 : privateData.length;
            MemorySegment data = len == 0 ? MemorySegment.NULL : a.allocate(len);
            if (len > 0) {
                data.copyFrom(MemorySegment.ofArray(privateData));
            }
            LibRdmacm.reject(id, data, len);
        }
    }

    @Override
    public void disconnect() {
        if (!disconnectSent) {
            disconnectSent = true;
            try {
                LibRdmacm.disconnect(id);
            } catch (NativeRdmaException e) {
                // EINVAL: never connected or already down; nothing to tell the peer.
            }
        }
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    @Override
    public void attach(Object attachment) {
        this.attachment = attachment;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        manager.forget(id);
        if (qp != null) {
            LibRdmacm.destroyQp(id);
            qp.release();
        }
        LibRdmacm.destroyId(id);
    }
}
