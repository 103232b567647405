package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_mr}: a memory registration with its local and remote keys. */
public final class IbvMr {
    public static final StructLayout LAYOUT = struct("ibv_mr",
            PTR.withName("context"),
            PTR.withName("pd"),
            PTR.withName("addr"),
            SIZE_T.withName("length"),
            U32.withName("handle"),
            U32.withName("lkey"),
            U32.withName("rkey"));

    private static final long ADDR = offset(LAYOUT, "addr");
    private static final long LENGTH = offset(LAYOUT, "length");
    private static final long LKEY = offset(LAYOUT, "lkey");
    private static final long RKEY = offset(LAYOUT, "rkey");

    /** {@code enum ibv_access_flags}. */
    public static final int ACCESS_LOCAL_WRITE = 1, ACCESS_REMOTE_WRITE = 1 << 1, ACCESS_REMOTE_READ = 1 << 2,
            ACCESS_REMOTE_ATOMIC = 1 << 3, ACCESS_MW_BIND = 1 << 4, ACCESS_ZERO_BASED = 1 << 5,
            ACCESS_ON_DEMAND = 1 << 6, ACCESS_HUGETLB = 1 << 7, ACCESS_FLUSH_GLOBAL = 1 << 8,
            ACCESS_FLUSH_PERSISTENT = 1 << 9, ACCESS_RELAXED_ORDERING = 1 << 20;

    private IbvMr() {
    }

    private static MemorySegment of(MemorySegment mr) {
        return mr.reinterpret(LAYOUT.byteSize());
    }

    public static long addr(MemorySegment mr) { return of(mr).get(PTR, ADDR).address(); }
    public static long length(MemorySegment mr) { return of(mr).get(SIZE_T, LENGTH); }
    public static int lkey(MemorySegment mr) { return of(mr).get(U32, LKEY); }
    public static int rkey(MemorySegment mr) { return of(mr).get(U32, RKEY); }
}
