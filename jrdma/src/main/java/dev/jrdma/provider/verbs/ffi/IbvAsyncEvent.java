package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.CLayouts.*;

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

    private IbvAsyncEvent() {
    }

    public static int eventType(MemorySegment e) { return e.get(INT, offset(LAYOUT, "event_type")); }
    public static MemorySegment element(MemorySegment e) { return e.get(PTR, offset(LAYOUT, "element")); }
    public static int portNum(MemorySegment e) { return e.get(INT, offset(LAYOUT, "element")); }
}
