package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_port_attr}: what {@code ibv_query_port} reports for one port. */
public final class IbvPortAttr {
    public static final StructLayout LAYOUT = struct("ibv_port_attr",
            INT.withName("state"),
            INT.withName("max_mtu"),
            INT.withName("active_mtu"),
            INT.withName("gid_tbl_len"),
            U32.withName("port_cap_flags"),
            U32.withName("max_msg_sz"),
            U32.withName("bad_pkey_cntr"),
            U32.withName("qkey_viol_cntr"),
            U16.withName("pkey_tbl_len"),
            U16.withName("lid"),
            U16.withName("sm_lid"),
            U8.withName("lmc"),
            U8.withName("max_vl_num"),
            U8.withName("sm_sl"),
            U8.withName("subnet_timeout"),
            U8.withName("init_type_reply"),
            U8.withName("active_width"),
            U8.withName("active_speed"),
            U8.withName("phys_state"),
            U8.withName("link_layer"),
            U8.withName("flags"),
            U16.withName("port_cap_flags2"));

    /** {@code IBV_LINK_LAYER_*}. */
    public static final int LINK_LAYER_UNSPECIFIED = 0, LINK_LAYER_INFINIBAND = 1, LINK_LAYER_ETHERNET = 2;

    private IbvPortAttr() {
    }

    public static int state(MemorySegment a) { return a.get(INT, offset(LAYOUT, "state")); }
    public static int maxMtu(MemorySegment a) { return a.get(INT, offset(LAYOUT, "max_mtu")); }
    public static int activeMtu(MemorySegment a) { return a.get(INT, offset(LAYOUT, "active_mtu")); }
    public static int gidTblLen(MemorySegment a) { return a.get(INT, offset(LAYOUT, "gid_tbl_len")); }
    public static int portCapFlags(MemorySegment a) { return a.get(U32, offset(LAYOUT, "port_cap_flags")); }
    public static long maxMsgSz(MemorySegment a) { return Integer.toUnsignedLong(a.get(U32, offset(LAYOUT, "max_msg_sz"))); }
    public static int pkeyTblLen(MemorySegment a) { return Short.toUnsignedInt(a.get(U16, offset(LAYOUT, "pkey_tbl_len"))); }
    public static int lid(MemorySegment a) { return Short.toUnsignedInt(a.get(U16, offset(LAYOUT, "lid"))); }
    public static int smLid(MemorySegment a) { return Short.toUnsignedInt(a.get(U16, offset(LAYOUT, "sm_lid"))); }
    public static int lmc(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "lmc"))); }
    public static int activeWidth(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "active_width"))); }
    public static int activeSpeed(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "active_speed"))); }
    public static int physState(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "phys_state"))); }
    public static int linkLayer(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "link_layer"))); }
}
