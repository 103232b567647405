package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct ibv_qp_attr} (with {@code ibv_ah_attr} and {@code ibv_global_route}): the
 * argument of {@code ibv_modify_qp} and {@code ibv_query_qp}, plus the attribute mask bits.
 */
public final class IbvQpAttr {
    public static final StructLayout GLOBAL_ROUTE = struct("ibv_global_route",
            IbvGidEntry.GID.withName("dgid"),
            U32.withName("flow_label"),
            U8.withName("sgid_index"),
            U8.withName("hop_limit"),
            U8.withName("traffic_class"));

    public static final StructLayout AH_ATTR = struct("ibv_ah_attr",
            GLOBAL_ROUTE.withName("grh"),
            U16.withName("dlid"),
            U8.withName("sl"),
            U8.withName("src_path_bits"),
            U8.withName("static_rate"),
            U8.withName("is_global"),
            U8.withName("port_num"));

    public static final StructLayout LAYOUT = struct("ibv_qp_attr",
            INT.withName("qp_state"),
            INT.withName("cur_qp_state"),
            INT.withName("path_mtu"),
            INT.withName("path_mig_state"),
            U32.withName("qkey"),
            U32.withName("rq_psn"),
            U32.withName("sq_psn"),
            U32.withName("dest_qp_num"),
            U32.withName("qp_access_flags"),
            IbvQpInitAttr.CAP.withName("cap"),
            AH_ATTR.withName("ah_attr"),
            AH_ATTR.withName("alt_ah_attr"),
            U16.withName("pkey_index"),
            U16.withName("alt_pkey_index"),
            U8.withName("en_sqd_async_notify"),
            U8.withName("sq_draining"),
            U8.withName("max_rd_atomic"),
            U8.withName("max_dest_rd_atomic"),
            U8.withName("min_rnr_timer"),
            U8.withName("port_num"),
            U8.withName("timeout"),
            U8.withName("retry_cnt"),
            U8.withName("rnr_retry"),
            U8.withName("alt_port_num"),
            U8.withName("alt_timeout"),
            U32.withName("rate_limit"));

    /** {@code enum ibv_qp_attr_mask}. */
    public static final int STATE = 1, CUR_STATE = 1 << 1, EN_SQD_ASYNC_NOTIFY = 1 << 2, ACCESS_FLAGS = 1 << 3,
            PKEY_INDEX = 1 << 4, PORT = 1 << 5, QKEY = 1 << 6, AV = 1 << 7, PATH_MTU = 1 << 8, TIMEOUT = 1 << 9,
            RETRY_CNT = 1 << 10, RNR_RETRY = 1 << 11, RQ_PSN = 1 << 12, MAX_QP_RD_ATOMIC = 1 << 13,
            ALT_PATH = 1 << 14, MIN_RNR_TIMER = 1 << 15, SQ_PSN = 1 << 16, MAX_DEST_RD_ATOMIC = 1 << 17,
            PATH_MIG_STATE = 1 << 18, CAP = 1 << 19, DEST_QPN = 1 << 20, RATE_LIMIT = 1 << 25;

    private IbvQpAttr() {
    }

    public static int qpState(MemorySegment a) { return a.get(INT, offset(LAYOUT, "qp_state")); }
    public static void qpState(MemorySegment a, int state) { a.set(INT, offset(LAYOUT, "qp_state"), state); }
    public static int pathMtu(MemorySegment a) { return a.get(INT, offset(LAYOUT, "path_mtu")); }
    public static int destQpNum(MemorySegment a) { return a.get(U32, offset(LAYOUT, "dest_qp_num")); }
    public static int accessFlags(MemorySegment a) { return a.get(U32, offset(LAYOUT, "qp_access_flags")); }
    public static int maxRdAtomic(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "max_rd_atomic"))); }
    public static int maxDestRdAtomic(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "max_dest_rd_atomic"))); }
    public static int rnrRetry(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "rnr_retry"))); }
    public static int retryCnt(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "retry_cnt"))); }
    public static int minRnrTimer(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "min_rnr_timer"))); }
    public static void minRnrTimer(MemorySegment a, int code) { a.set(U8, offset(LAYOUT, "min_rnr_timer"), (byte) code); }
    public static int portNum(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "port_num"))); }
    /** The primary address vector's GRH traffic class ({@code ah_attr.grh.traffic_class}). */
    public static int trafficClass(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "ah_attr.grh.traffic_class"))); }
    /** ... its service level ({@code ah_attr.sl}). */
    public static int serviceLevel(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "ah_attr.sl"))); }
    /** ... its GRH flow label, 20 bits ({@code ah_attr.grh.flow_label}). */
    public static int flowLabel(MemorySegment a) { return a.get(U32, offset(LAYOUT, "ah_attr.grh.flow_label")) & 0xFFFFF; }
    public static int timeout(MemorySegment a) { return Byte.toUnsignedInt(a.get(U8, offset(LAYOUT, "timeout"))); }
}
