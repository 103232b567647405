package dev.jrdma.provider.verbs;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.AddressSpace;
import dev.jrdma.os.Errno;
import dev.jrdma.provider.verbs.ffi.DataPathVerbs;
import dev.jrdma.provider.verbs.ffi.IbvContext;
import dev.jrdma.provider.verbs.ffi.IbvWc;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.SharedCompletionSink;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** An {@code ibv_cq} polled through {@code ops.poll_cq} into a reused array of {@code ibv_wc}. */
final class VerbsCompletionQueue implements CompletionQueue {
    private static final int BATCH = 32;
    final MemorySegment cq;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment wcs = arena.allocate(IbvWc.LAYOUT, BATCH);
    /**
     * Set by {@link #close}, on the thread that polls: the {@code ibv_cq} is freed then, and a
     * poll or an arm after that must fail here rather than hand libibverbs a freed pointer.
     */
    private boolean destroyed;

    VerbsCompletionQueue(MemorySegment cq, MemorySegment context) {
        this.cq = cq;
        this.cqAddr = cq.address();
        this.pollFn = IbvContext.pollCqFn(context);
        this.notifyFn = IbvContext.reqNotifyCqFn(context);
    }

    /** {@link #cq} and {@link #wcs} by address, for the hot path ({@link AddressSpace}); valid until {@link #close}. */
    private final long cqAddr;
    private final long wcsAddr = wcs.address();

    @Override
    public int poll(CompletionSink sink, int max) {
        int n = pollInto(max);
        for (int i = 0; i < n; i++) {
            long wc = wcsAddr + i * IbvWc.SIZE;
            boolean withImm = (IbvWc.wcFlagsAt(wc) & IbvWc.WITH_IMM) != 0;
            sink.onCompletion(IbvWc.wrIdAt(wc), IbvWc.statusAt(wc), IbvWc.opcodeAt(wc), IbvWc.byteLenAt(wc),
                    withImm ? IbvWc.immDataAt(wc) : 0, withImm);
        }
        return n;
    }

    @Override
    public int pollShared(SharedCompletionSink sink, int max) {
        int n = pollInto(max);
        for (int i = 0; i < n; i++) {
            long wc = wcsAddr + i * IbvWc.SIZE;
            boolean withImm = (IbvWc.wcFlagsAt(wc) & IbvWc.WITH_IMM) != 0;
            sink.onCompletion(IbvWc.qpNumAt(wc), IbvWc.wrIdAt(wc), IbvWc.statusAt(wc), IbvWc.opcodeAt(wc),
                    IbvWc.byteLenAt(wc), withImm ? IbvWc.immDataAt(wc) : 0, withImm);
        }
        return n;
    }

    /**
     * {@link #poll} for a UD queue pair: each receive's length is its payload (the
     * {@code grh}-byte GRH before it taken off) and carries its sender's QP number.
     */
    int pollDatagrams(DatagramQueuePair.Sink sink, int max, int grh) {
        int n = pollInto(max);
        for (int i = 0; i < n; i++) {
            int status = IbvWc.status(wcs, i);
            if ((IbvWc.wrId(wcs, i) & RECEIVE_BIT) != 0) {
                sink.onReceive(IbvWc.wrId(wcs, i) & ~RECEIVE_BIT, status,
                        status == 0 ? IbvWc.byteLen(wcs, i) - grh : 0, IbvWc.srcQp(wcs, i));
            } else {
                sink.onSend(IbvWc.wrId(wcs, i), status);
            }
        }
        return n;
    }

    /** Polls up to {@code max} (at most {@value #BATCH}) work completions into {@link #wcs}; returns how many. */
    private int pollInto(int max) {
        if (destroyed) {
            throw new IllegalStateException("poll of a destroyed completion queue");
        }
        int n = DataPathVerbs.pollCq(pollFn, cqAddr, Math.min(max, BATCH), wcsAddr);
        if (n < 0) {
            throw new RdmaException("ibv_poll_cq failed (" + n + "): the CQ overran or the device failed");
        }
        return n;
    }

    /**
     * Set in the wrId of a UD queue pair's receives: a failed completion's opcode is undefined
     * (verbs), so the id says which queue it came from.
     */
    static final long RECEIVE_BIT = 1L << 62;

    @Override
    public void arm() {
        if (destroyed) {
            throw new IllegalStateException("ibv_req_notify_cq on a destroyed completion queue");
        }
        int rc = LibIbverbs.reqNotifyCq(notifyFn, cq, false);
        if (rc != 0) {
            throw Errno.failure("ibv_req_notify_cq", rc, null);
        }
    }

    @Override
    public void close() {
        if (destroyed) {
            return;
        }
        destroyed = true;
        LibIbverbs.destroyCq(cq);
        arena.close();
    }
}
