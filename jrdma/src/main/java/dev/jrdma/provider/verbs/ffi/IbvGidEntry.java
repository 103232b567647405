package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_gid_entry} (with {@code union ibv_gid}): one GID table entry and its RoCE type. */
public final class IbvGidEntry {
    /** {@code union ibv_gid}: 16 bytes, read as raw bytes or as subnet prefix and interface id. */
    public static final GroupLayout GID = union("ibv_gid",
            chars(16).withName("raw"),
            struct(null, BE64.withName("subnet_prefix"), BE64.withName("interface_id")).withName("global"));

    public static final StructLayout LAYOUT = struct("ibv_gid_entry",
            GID.withName("gid"),
            U32.withName("gid_index"),
            U32.withName("port_num"),
            U32.withName("gid_type"),
            U32.withName("ndev_ifindex"));

    /** {@code enum ibv_gid_type}. */
    public static final int GID_TYPE_IB = 0, GID_TYPE_ROCE_V1 = 1, GID_TYPE_ROCE_V2 = 2;

    private IbvGidEntry() {
    }

    public static byte[] gid(MemorySegment e) {
        return e.asSlice(offset(LAYOUT, "gid"), 16).toArray(U8);
    }

    public static int gidIndex(MemorySegment e) { return e.get(U32, offset(LAYOUT, "gid_index")); }
    public static int portNum(MemorySegment e) { return e.get(U32, offset(LAYOUT, "port_num")); }
    public static int gidType(MemorySegment e) { return e.get(U32, offset(LAYOUT, "gid_type")); }
    public static int ndevIfindex(MemorySegment e) { return e.get(U32, offset(LAYOUT, "ndev_ifindex")); }
}
