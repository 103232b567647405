package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct ibv_mw}: a memory window. Its {@code rkey} is what a bind gives peers; rxe's
 * provider does not write a type 2 window's new key back after a bind (pyverbs had to, rdma-core
 * PR #1777), and the next bind is checked against it, so jrdma sets it with {@link #rkey(MemorySegment, int)}.
 */
public final class IbvMw {
    public static final StructLayout LAYOUT = struct("ibv_mw",
            PTR.withName("context"),
            PTR.withName("pd"),
            U32.withName("rkey"),
            U32.withName("handle"),
            INT.withName("type"));

    private static final long RKEY = offset(LAYOUT, "rkey");

    private IbvMw() {
    }

    public static int rkey(MemorySegment mw) {
        return mw.get(U32, RKEY);
    }

    public static void rkey(MemorySegment mw, int rkey) {
        mw.set(U32, RKEY, rkey);
    }

    /** {@code ibv_inc_rkey}: the key with its low 8 bits (the "key" the consumer owns) stepped by one. */
    public static int nextRkey(int rkey) {
        return (rkey & 0xFFFFFF00) | ((rkey + 1) & 0xFF);
    }
}
