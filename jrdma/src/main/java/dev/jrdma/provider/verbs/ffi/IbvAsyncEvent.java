package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_async_event}: a device, port, QP, CQ or SRQ event from {@code ibv_get_async_event}. */
public final class IbvAsyncEvent {
    public static final StructLayout LAYOUT = struct("ibv_async_event",
            union(null, PTR.withName("cq"), PTR.withName("qp"), PTR.withName("srq"), PTR.withName("wq"),
                    INT.withName("port_num")).withName("element"),
            INT.withName("event_type"));

    /** {@code enum ibv_event_type} values jrdma reacts to. */
    public static final int CQ_ERR = 0, QP_FATAL = 1, QP_REQ_ERR = 2, QP_ACCESS_ERR = 3, COMM_EST = 4,
            SQ_DRAINED = 5, PATH_MIG = 6, PATH_MIG_ERR = 7, DEVICE_FATAL = 8, PORT_ACTIVE = 9, PORT_ERR = 10,
            LID_CHANGE = 11, PKEY_CHANGE = 12, SM_CHANGE = 13, SRQ_ERR = 14, SRQ_LIMIT_REACHED = 15,
            QP_LAST_WQE_REACHED = 16, CLIENT_REREGISTER = 17, GID_CHANGE = 18, WQ_FATAL = 19;

    private static final String[] NAMES = {"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST",
            "SQ_DRAINED", "PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE",
            "PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER",
            "GID_CHANGE", "WQ_FATAL"};

    private IbvAsyncEvent() {
    }

    /** "IBV_EVENT_QP_FATAL"... as verbs.h spells it. */
    public static String name(int type) {
        return type >= 0 && type < NAMES.length ? "IBV_EVENT_" + NAMES[type] : "IBV_EVENT_" + type;
    }

    /** Events whose element is a QP. */
    public static boolean aboutQp(int type) {
        return type == QP_FATAL || type == QP_REQ_ERR || type == QP_ACCESS_ERR || type == COMM_EST || type == SQ_DRAINED
                || type == PATH_MIG || type == PATH_MIG_ERR || type == QP_LAST_WQE_REACHED;
    }

    /** Events whose element is a port number. */
    public static boolean aboutPort(int type) {
        return type == PORT_ACTIVE || type == PORT_ERR || type == LID_CHANGE || type == PKEY_CHANGE || type == SM_CHANGE
                || type == CLIENT_REREGISTER || type == GID_CHANGE;
    }

    /** Events after which the QP, CQ or device can no longer be used. */
    public static boolean fatal(int type) {
        return type == QP_FATAL || type == QP_REQ_ERR || type == QP_ACCESS_ERR || type == CQ_ERR || type == DEVICE_FATAL
                || type == PATH_MIG_ERR || type == SRQ_ERR || type == WQ_FATAL;
    }

    public static int eventType(MemorySegment e) { return e.get(INT, offset(LAYOUT, "event_type")); }
    public static MemorySegment element(MemorySegment e) { return e.get(PTR, offset(LAYOUT, "element")); }
    public static int portNum(MemorySegment e) { return e.get(INT, offset(LAYOUT, "element")); }
}
