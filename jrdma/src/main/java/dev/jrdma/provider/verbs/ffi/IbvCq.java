package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_cq}: a completion queue. */
public final class IbvCq {
    public static final StructLayout LAYOUT = struct("ibv_cq",
            PTR.withName("context"),
            PTR.withName("channel"),
            PTR.withName("cq_context"),
            U32.withName("handle"),
            INT.withName("cqe"),
            PTHREAD_MUTEX.withName("mutex"),
            PTHREAD_COND.withName("cond"),
            U32.withName("comp_events_completed"),
            U32.withName("async_events_completed"));

    private static final long CONTEXT = offset(LAYOUT, "context");
    private static final long CQE = offset(LAYOUT, "cqe");

    private IbvCq() {
    }

    public static MemorySegment context(MemorySegment cq) {
        return cq.reinterpret(LAYOUT.byteSize()).get(PTR, CONTEXT);
    }

    /** The number of entries the provider actually gave the CQ (at least what was asked). */
    public static int cqe(MemorySegment cq) {
        return cq.reinterpret(LAYOUT.byteSize()).get(INT, CQE);
    }
}
