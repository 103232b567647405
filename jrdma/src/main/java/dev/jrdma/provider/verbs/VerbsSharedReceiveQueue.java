package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.IbvContext;
import dev.jrdma.provider.verbs.ffi.IbvRecvWr;
import dev.jrdma.provider.verbs.ffi.IbvSge;
import dev.jrdma.provider.verbs.ffi.IbvSrqInitAttr;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.Srq;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An {@code ibv_srq} on a device's protection domain. Posting reuses one receive request, as
 * {@link VerbsQueuePair} does (the owner posts one at a time). Its limit event comes through the
 * device's async events ({@code IBV_EVENT_SRQ_LIMIT_REACHED}, whose element is the SRQ), found
 * here by the SRQ's address.
 */
final class VerbsSharedReceiveQueue implements Srq {
    /** The open SRQs by address: the async-event reader finds the one an event names. */
    private static final Map<Long, VerbsSharedReceiveQueue> OPEN = new ConcurrentHashMap<>();

    final MemorySegment srq;
    final VerbsDevice device;
    private final int capacity;
    private final Runnable onLimit;
    private final MemorySegment postSrqRecvFn;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment recvWr = arena.allocate(IbvRecvWr.LAYOUT);
    private final MemorySegment recvSge = arena.allocate(IbvSge.LAYOUT);
    private final MemorySegment badWr = arena.allocate(ValueLayout.ADDRESS);
    private final MemorySegment limitAttr = arena.allocate(IbvSrqInitAttr.ATTR);
    private boolean closed;

    VerbsSharedReceiveQueue(VerbsDevice device, int capacity, Runnable onLimit) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a shared receive queue holds 1 receive or more, not " + capacity);
        }
        this.device = device;
        this.onLimit = onLimit;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment init = a.allocate(IbvSrqInitAttr.LAYOUT);
            IbvSrqInitAttr.set(init, capacity, 1);
            srq = LibIbverbs.createSrq(device.pd, init);
            // The device writes back what it granted (at least what was asked).
            this.capacity = Math.max(capacity, IbvSrqInitAttr.maxWr(init));
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
        postSrqRecvFn = IbvContext.postSrqRecvFn(device.context);
        OPEN.put(srq.address(), this);
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        IbvSge.set(recvSge, localAddr, length, lkey);
        IbvRecvWr.set(recvWr, wrId, recvSge, 1);
        return LibIbverbs.postSrqRecv(postSrqRecvFn, srq, recvWr, badWr);
    }

    @Override
    public synchronized void armLimit(int limit) {
        if (limit < 0 || limit > capacity) {
            throw new IllegalArgumentException("a limit of " + limit + " receives on a shared receive queue of "
                    + capacity);
        }
        IbvSrqInitAttr.setLimit(limitAttr, limit);
        LibIbverbs.modifySrq(srq, limitAttr, IbvSrqInitAttr.LIMIT);
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            OPEN.remove(srq.address());
            LibIbverbs.destroySrq(srq);
            arena.close();
        }
    }

    /** IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ at {@code address}: its onLimit, if it is one of ours. */
    static void limitReached(long address) {
        VerbsSharedReceiveQueue q = OPEN.get(address);
        if (q != null) {
            q.onLimit.run();
        }
    }
}
