package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_srq_init_attr} with {@code struct ibv_srq_attr}: what a new SRQ is asked for. */
public final class IbvSrqInitAttr {
    public static final StructLayout ATTR = struct("ibv_srq_attr",
            U32.withName("max_wr"),
            U32.withName("max_sge"),
            U32.withName("srq_limit"));

    public static final StructLayout LAYOUT = struct("ibv_srq_init_attr",
            PTR.withName("srq_context"),
            ATTR.withName("attr"));

    /** {@code enum ibv_srq_attr_mask}, for {@code ibv_modify_srq}. */
    public static final int MAX_WR = 1, LIMIT = 1 << 1;

    private IbvSrqInitAttr() {
    }

    public static void set(MemorySegment a, int maxWr, int maxSge) {
        a.fill((byte) 0);
        a.set(U32, offset(LAYOUT, "attr.max_wr"), maxWr);
        a.set(U32, offset(LAYOUT, "attr.max_sge"), maxSge);
    }

    /** {@code attr.max_wr}: after {@code ibv_create_srq}, what the device granted. */
    public static int maxWr(MemorySegment a) {
        return a.get(U32, offset(LAYOUT, "attr.max_wr"));
    }

    /** Fills a {@code struct ibv_srq_attr} ({@link #ATTR}) for {@code ibv_modify_srq} with {@link #LIMIT}. */
    public static void setLimit(MemorySegment attr, int limit) {
        attr.fill((byte) 0);
        attr.set(U32, offset(ATTR, "srq_limit"), limit);
    }
}
