package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_qp}: a queue pair, with the QP type and state enums. */
public final class IbvQp {
    public static final StructLayout LAYOUT = struct("ibv_qp",
            PTR.withName("context"),
            PTR.withName("qp_context"),
            PTR.withName("pd"),
            PTR.withName("send_cq"),
            PTR.withName("recv_cq"),
            PTR.withName("srq"),
            U32.withName("handle"),
            U32.withName("qp_num"),
            INT.withName("state"),
            INT.withName("qp_type"),
            PTHREAD_MUTEX.withName("mutex"),
            PTHREAD_COND.withName("cond"),
            U32.withName("events_completed"));

    /** {@code enum ibv_qp_type}. */
    public static final int QPT_RC = 2, QPT_UC = 3, QPT_UD = 4, QPT_RAW_PACKET = 8, QPT_XRC_SEND = 9,
            QPT_XRC_RECV = 10, QPT_DRIVER = 0xff;

    /** {@code enum ibv_qp_state}. */
    public static final int QPS_RESET = 0, QPS_INIT = 1, QPS_RTR = 2, QPS_RTS = 3, QPS_SQD = 4, QPS_SQE = 5,
            QPS_ERR = 6, QPS_UNKNOWN = 7;

    private static final long CONTEXT = offset(LAYOUT, "context");
    private static final long QP_NUM = offset(LAYOUT, "qp_num");
    private static final long STATE = offset(LAYOUT, "state");

    private IbvQp() {
    }

    private static MemorySegment of(MemorySegment qp) {
        return qp.reinterpret(LAYOUT.byteSize());
    }

    public static MemorySegment context(MemorySegment qp) { return of(qp).get(PTR, CONTEXT); }
    public static int qpNum(MemorySegment qp) { return of(qp).get(U32, QP_NUM); }

    /** The state last set through libibverbs; {@code ibv_query_qp} asks the device. */
    public static int cachedState(MemorySegment qp) { return of(qp).get(INT, STATE); }

    public static String stateName(int state) {
        return switch (state) {
            case QPS_RESET -> "RESET";
            case QPS_INIT -> "INIT";
            case QPS_RTR -> "RTR";
            case QPS_RTS -> "RTS";
            case QPS_SQD -> "SQD";
            case QPS_SQE -> "SQE";
            case QPS_ERR -> "ERR";
            default -> "UNKNOWN(" + state + ")";
        };
    }
}
