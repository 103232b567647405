package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_sge}: one scatter/gather element (address, length, lkey). */
public final class IbvSge {
    public static final StructLayout LAYOUT = struct("ibv_sge",
            U64.withName("addr"),
            U32.withName("length"),
            U32.withName("lkey"));

    private static final long ADDR = offset(LAYOUT, "addr");
    private static final long LENGTH = offset(LAYOUT, "length");
    private static final long LKEY = offset(LAYOUT, "lkey");

    private IbvSge() {
    }

    /** {@link #set} by address (see {@link AddressSpace}): the hot path's. */
    public static void setAt(long sge, long addr, int length, int lkey) {
        AddressSpace.putLong(sge + ADDR, addr);
        AddressSpace.putInt(sge + LENGTH, length);
        AddressSpace.putInt(sge + LKEY, lkey);
    }

    public static void set(MemorySegment sge, long addr, int length, int lkey) {
        sge.set(U64, ADDR, addr);
        sge.set(U32, LENGTH, length);
        sge.set(U32, LKEY, lkey);
    }
}
