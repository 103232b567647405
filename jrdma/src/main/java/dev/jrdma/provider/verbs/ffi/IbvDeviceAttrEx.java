package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct ibv_device_attr_ex}: the extended device attributes, of which jrdma reads the
 * ODP capabilities and the extended capability flags. Members past {@code pci_atomic_caps} are
 * laid out fully so that the size passed to {@code query_device_ex} is the C size.
 */
public final class IbvDeviceAttrEx {
    static final StructLayout ODP_CAPS = struct("ibv_odp_caps",
            U64.withName("general_caps"),
            struct(null, U32.withName("rc_odp_caps"), U32.withName("uc_odp_caps"), U32.withName("ud_odp_caps"))
                    .withName("per_transport_caps"));

    public static final StructLayout LAYOUT = struct("ibv_device_attr_ex",
            IbvDeviceAttr.LAYOUT.withName("orig_attr"),
            U32.withName("comp_mask"),
            ODP_CAPS.withName("odp_caps"),
            U64.withName("completion_timestamp_mask"),
            U64.withName("hca_core_clock"),
            U64.withName("device_cap_flags_ex"),
            struct(null, U32.withName("max_tso"), U32.withName("supported_qpts")).withName("tso_caps"),
            struct(null, U32.withName("supported_qpts"), U32.withName("max_rwq_indirection_tables"),
                    U32.withName("max_rwq_indirection_table_size"), U64.withName("rx_hash_fields_mask"),
                    U8.withName("rx_hash_function")).withName("rss_caps"),
            U32.withName("max_wq_type_rq"),
            struct(null, U32.withName("qp_rate_limit_min"), U32.withName("qp_rate_limit_max"),
                    U32.withName("supported_qpts")).withName("packet_pacing_caps"),
            U32.withName("raw_packet_caps"),
            struct(null, U32.withName("max_rndv_hdr_size"), U32.withName("max_num_tags"), U32.withName("flags"),
                    U32.withName("max_ops"), U32.withName("max_sge")).withName("tm_caps"),
            struct(null, U16.withName("max_cq_count"), U16.withName("max_cq_period")).withName("cq_mod_caps"),
            U64.withName("max_dm_size"),
            struct(null, U16.withName("fetch_add"), U16.withName("swap"), U16.withName("compare_swap"))
                    .withName("pci_atomic_caps"),
            U32.withName("xrc_odp_caps"),
            U32.withName("phys_port_cnt_ex"));

    /** IBV_ODP_SUPPORT in odp_caps.general_caps. */
    public static final long IBV_ODP_SUPPORT = 1;
    /** IBV_ODP_SUPPORT_IMPLICIT in odp_caps.general_caps: one MR for the whole address space. */
    public static final long IBV_ODP_SUPPORT_IMPLICIT = 1 << 1;

    private static final long GENERAL_CAPS = offset(LAYOUT, "odp_caps.general_caps");
    private static final long RC_ODP_CAPS = offset(LAYOUT, "odp_caps.per_transport_caps.rc_odp_caps");
    private static final long CAP_FLAGS_EX = offset(LAYOUT, "device_cap_flags_ex");
    private static final long MAX_DM_SIZE = offset(LAYOUT, "max_dm_size");

    private IbvDeviceAttrEx() {
    }

    /** The embedded {@code struct ibv_device_attr}. */
    public static MemorySegment origAttr(MemorySegment attrEx) {
        return attrEx.asSlice(0, IbvDeviceAttr.LAYOUT);
    }

    public static long odpGeneralCaps(MemorySegment attrEx) {
        return attrEx.get(U64, GENERAL_CAPS);
    }

    public static int odpRcCaps(MemorySegment attrEx) {
        return attrEx.get(U32, RC_ODP_CAPS);
    }

    public static long deviceCapFlagsEx(MemorySegment attrEx) {
        return attrEx.get(U64, CAP_FLAGS_EX);
    }

    /** Device memory, in bytes; 0 when the device has none. */
    public static long maxDmSize(MemorySegment attrEx) {
        return attrEx.get(U64, MAX_DM_SIZE);
    }

    static MemoryLayout layout() {
        return LAYOUT;
    }
}
