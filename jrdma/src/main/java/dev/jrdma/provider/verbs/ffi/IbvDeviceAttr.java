package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_device_attr}: what {@code ibv_query_device} reports. */
public final class IbvDeviceAttr {
    public static final StructLayout LAYOUT = struct("ibv_device_attr",
            chars(64).withName("fw_ver"),
            BE64.withName("node_guid"),
            BE64.withName("sys_image_guid"),
            U64.withName("max_mr_size"),
            U64.withName("page_size_cap"),
            U32.withName("vendor_id"),
            U32.withName("vendor_part_id"),
            U32.withName("hw_ver"),
            INT.withName("max_qp"),
            INT.withName("max_qp_wr"),
            U32.withName("device_cap_flags"),
            INT.withName("max_sge"),
            INT.withName("max_sge_rd"),
            INT.withName("max_cq"),
            INT.withName("max_cqe"),
            INT.withName("max_mr"),
            INT.withName("max_pd"),
            INT.withName("max_qp_rd_atom"),
            INT.withName("max_ee_rd_atom"),
            INT.withName("max_res_rd_atom"),
            INT.withName("max_qp_init_rd_atom"),
            INT.withName("max_ee_init_rd_atom"),
            INT.withName("atomic_cap"),
            INT.withName("max_ee"),
            INT.withName("max_rdd"),
            INT.withName("max_mw"),
            INT.withName("max_raw_ipv6_qp"),
            INT.withName("max_raw_ethy_qp"),
            INT.withName("max_mcast_grp"),
            INT.withName("max_mcast_qp_attach"),
            INT.withName("max_total_mcast_qp_attach"),
            INT.withName("max_ah"),
            INT.withName("max_fmr"),
            INT.withName("max_map_per_fmr"),
            INT.withName("max_srq"),
            INT.withName("max_srq_wr"),
            INT.withName("max_srq_sge"),
            U16.withName("max_pkeys"),
            U8.withName("local_ca_ack_delay"),
            U8.withName("phys_port_cnt"));

    private IbvDeviceAttr() {
    }

    /** Reads an int member by name, e.g. {@code "max_qp_rd_atom"}; control path only. */
    public static int intField(MemorySegment attr, String name) {
        return attr.get(INT, offset(LAYOUT, name));
    }

    public static String fwVer(MemorySegment attr) {
        return attr.getString(offset(LAYOUT, "fw_ver"));
    }

    public static long nodeGuid(MemorySegment attr) {
        return attr.get(BE64, offset(LAYOUT, "node_guid"));
    }

    public static long sysImageGuid(MemorySegment attr) {
        return attr.get(BE64, offset(LAYOUT, "sys_image_guid"));
    }

    public static long maxMrSize(MemorySegment attr) {
        return attr.get(U64, offset(LAYOUT, "max_mr_size"));
    }

    public static long pageSizeCap(MemorySegment attr) {
        return attr.get(U64, offset(LAYOUT, "page_size_cap"));
    }

    public static int maxPkeys(MemorySegment attr) {
        return Short.toUnsignedInt(attr.get(U16, offset(LAYOUT, "max_pkeys")));
    }

    public static int localCaAckDelay(MemorySegment attr) {
        return Byte.toUnsignedInt(attr.get(U8, offset(LAYOUT, "local_ca_ack_delay")));
    }

    public static int physPortCnt(MemorySegment attr) {
        return Byte.toUnsignedInt(attr.get(U8, offset(LAYOUT, "phys_port_cnt")));
    }
}
