package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.INT;
import static dev.jrdma.os.CLayouts.U64;
import static java.lang.foreign.FunctionDescriptor.of;

import dev.jrdma.os.AddressSpace;
import dev.jrdma.os.NativeCalls;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The verbs of the data path by address: {@code ibv_post_send}, {@code ibv_post_recv} and
 * {@code ibv_poll_cq} through the provider's function pointers (they are static inline in
 * verbs.h), as critical downcalls whose pointer arguments are plain {@code long}s.
 *
 * <p>Why by address: a segment of a shared arena passed to a downcall is acquired and released
 * around the call, two atomic operations per argument, on every post and every poll. The
 * addresses here are of memory the caller owns for the queue pair's or completion queue's whole
 * life (see {@link AddressSpace}); {@link LibIbverbs} keeps the segment forms for the control path.
 * Each returns what the verb returns (0 or an errno; for a poll, the count or a negative value)
 * and allocates nothing.
 */
public final class DataPathVerbs {
    private static final MethodHandle POLL_CQ = Downcalls.pointer(of(INT, U64, INT, U64), true);
    private static final MethodHandle POST_SEND = Downcalls.pointer(of(INT, U64, U64, U64), true);
    private static final MethodHandle POST_RECV = Downcalls.pointer(of(INT, U64, U64, U64), true);

    private DataPathVerbs() {
    }

    /** {@code ibv_poll_cq}: up to {@code max} completions of {@code cq} into the array at {@code wcs}. */
    public static int pollCq(MemorySegment pollCqFn, long cq, int max, long wcs) {
        try {
            return (int) POLL_CQ.invokeExact(pollCqFn, cq, max, wcs);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_post_send} of the chain at {@code wr}; the first request not posted goes to {@code badWr}. */
    public static int postSend(MemorySegment postSendFn, long qp, long wr, long badWr) {
        try {
            return (int) POST_SEND.invokeExact(postSendFn, qp, wr, badWr);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_post_recv} of the request at {@code wr}. */
    public static int postRecv(MemorySegment postRecvFn, long qp, long wr, long badWr) {
        try {
            return (int) POST_RECV.invokeExact(postRecvFn, qp, wr, badWr);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }
}
