package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct rdma_cm_event} (with {@code rdma_ud_param}) and {@code enum rdma_cm_event_type}. */
public final class RdmaCmEvent {
    static final StructLayout UD_PARAM = struct("rdma_ud_param",
            PTR.withName("private_data"),
            U8.withName("private_data_len"),
            IbvQpAttr.AH_ATTR.withName("ah_attr"),
            U32.withName("qp_num"),
            U32.withName("qkey"));

    public static final StructLayout LAYOUT = struct("rdma_cm_event",
            PTR.withName("id"),
            PTR.withName("listen_id"),
            INT.withName("event"),
            INT.withName("status"),
            union(null, RdmaConnParam.LAYOUT.withName("conn"), UD_PARAM.withName("ud")).withName("param"));

    public static final int ADDR_RESOLVED = 0, ADDR_ERROR = 1, ROUTE_RESOLVED = 2, ROUTE_ERROR = 3,
            CONNECT_REQUEST = 4, CONNECT_RESPONSE = 5, CONNECT_ERROR = 6, UNREACHABLE = 7, REJECTED = 8,
            ESTABLISHED = 9, DISCONNECTED = 10, DEVICE_REMOVAL = 11, MULTICAST_JOIN = 12, MULTICAST_ERROR = 13,
            ADDR_CHANGE = 14, TIMEWAIT_EXIT = 15;

    private static final String[] NAMES = {
        "RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
        "RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
        "RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
        "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };

    private RdmaCmEvent() {
    }

    private static MemorySegment of(MemorySegment event) {
        return event.reinterpret(LAYOUT.byteSize());
    }

    public static MemorySegment id(MemorySegment e) { return of(e).get(PTR, offset(LAYOUT, "id")); }
    public static MemorySegment listenId(MemorySegment e) { return of(e).get(PTR, offset(LAYOUT, "listen_id")); }
    public static int event(MemorySegment e) { return of(e).get(INT, offset(LAYOUT, "event")); }
    public static int status(MemorySegment e) { return of(e).get(INT, offset(LAYOUT, "status")); }

    /** The {@code param.conn} member, valid for connection events. */
    public static MemorySegment conn(MemorySegment e) {
        return of(e).asSlice(offset(LAYOUT, "param.conn"), RdmaConnParam.LAYOUT);
    }

    /** The {@code param.ud} member, valid for UD events (ESTABLISHED on a UDP id, MULTICAST_JOIN). */
    public static MemorySegment ud(MemorySegment e) {
        return of(e).asSlice(offset(LAYOUT, "param.ud"), UD_PARAM);
    }

    /** {@code param.ud.ah_attr}: the destination, as {@code ibv_create_ah} takes it. */
    public static MemorySegment udAhAttr(MemorySegment e) {
        return ud(e).asSlice(offset(UD_PARAM, "ah_attr"), IbvQpAttr.AH_ATTR);
    }

    /** {@code param.ud.qp_num}: the remote QP (0xFFFFFF for a multicast group). */
    public static int udQpNum(MemorySegment e) {
        return ud(e).get(U32, offset(UD_PARAM, "qp_num"));
    }

    /** {@code param.ud.private_data}: for MULTICAST_JOIN/ERROR, the context given to rdma_join_multicast. */
    public static long udContext(MemorySegment e) {
        return ud(e).get(PTR, offset(UD_PARAM, "private_data")).address();
    }

    /** {@code param.ud.qkey}: the Q_Key sends to it carry. */
    public static int udQkey(MemorySegment e) {
        return ud(e).get(U32, offset(UD_PARAM, "qkey"));
    }

    /** The private data the peer sent with this event (copied), or an empty array. */
    public static byte[] privateData(MemorySegment e) {
        MemorySegment conn = conn(e);
        MemorySegment data = RdmaConnParam.privateData(conn);
        int len = RdmaConnParam.privateDataLen(conn);
        if (data.equals(MemorySegment.NULL) || len == 0) {
            return new byte[0];
        }
        return data.reinterpret(len).toArray(U8);
    }

    /** The enum constant's name, e.g. {@code RDMA_CM_EVENT_ESTABLISHED}. */
    public static String name(int event) {
        return event >= 0 && event < NAMES.length ? NAMES[event] : "RDMA_CM_EVENT_" + event;
    }
}
