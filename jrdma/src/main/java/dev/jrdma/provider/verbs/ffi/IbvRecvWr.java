package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_recv_wr}: a receive work request. */
public final class IbvRecvWr {
    public static final StructLayout LAYOUT = struct("ibv_recv_wr",
            U64.withName("wr_id"),
            PTR.withName("next"),
            PTR.withName("sg_list"),
            INT.withName("num_sge"));

    private static final long WR_ID = offset(LAYOUT, "wr_id");
    private static final long NEXT = offset(LAYOUT, "next");
    private static final long SG_LIST = offset(LAYOUT, "sg_list");
    private static final long NUM_SGE = offset(LAYOUT, "num_sge");

    private IbvRecvWr() {
    }

    public static void set(MemorySegment wr, long wrId, MemorySegment sgList, int numSge) {
        wr.set(U64, WR_ID, wrId);
        wr.set(PTR, NEXT, MemorySegment.NULL);
        wr.set(PTR, SG_LIST, sgList);
        wr.set(INT, NUM_SGE, numSge);
    }

    public static void next(MemorySegment wr, MemorySegment next) {
        wr.set(PTR, NEXT, next);
    }
}
