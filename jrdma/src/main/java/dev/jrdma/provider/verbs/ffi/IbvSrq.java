package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_srq}: a shared receive queue. */
public final class IbvSrq {
    public static final StructLayout LAYOUT = struct("ibv_srq",
            PTR.withName("context"),
            PTR.withName("srq_context"),
            PTR.withName("pd"),
            U32.withName("handle"),
            PTHREAD_MUTEX.withName("mutex"),
            PTHREAD_COND.withName("cond"),
            U32.withName("events_completed"));

    private IbvSrq() {
    }

    public static MemorySegment context(MemorySegment srq) {
        return srq.reinterpret(LAYOUT.byteSize()).get(PTR, offset(LAYOUT, "context"));
    }
}
