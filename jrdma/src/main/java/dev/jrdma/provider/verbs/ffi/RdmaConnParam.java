package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct rdma_conn_param}: what {@code rdma_connect} and {@code rdma_accept} offer and what
 * a CONNECT_REQUEST / ESTABLISHED event carries (private data, RDMA read/atomic depths, retries).
 */
public final class RdmaConnParam {
    public static final StructLayout LAYOUT = struct("rdma_conn_param",
            PTR.withName("private_data"),
            U8.withName("private_data_len"),
            U8.withName("responder_resources"),
            U8.withName("initiator_depth"),
            U8.withName("flow_control"),
            U8.withName("retry_count"),
            U8.withName("rnr_retry_count"),
            U8.withName("srq"),
            U32.withName("qp_num"));

    /** The most private data rdma_cm carries on an RC connect (56 bytes, 196 on accept for IB CM). */
    public static final int MAX_CONNECT_PRIVATE_DATA = 56;

    private RdmaConnParam() {
    }

    /**
     * Fills a conn param. {@code responderResources} bounds the RDMA reads/atomics the peer may
     * have outstanding at us; {@code initiatorDepth} the ones we may have outstanding at the peer.
     * {@code rnrRetry} 7 means "retry forever": callers refuse it before here.
     */
    public static void set(MemorySegment p, MemorySegment privateData, int privateDataLen, int responderResources,
                           int initiatorDepth, int retryCount, int rnrRetry) {
        p.fill((byte) 0);
        p.set(PTR, offset(LAYOUT, "private_data"), privateData);
        p.set(U8, offset(LAYOUT, "private_data_len"), (byte) privateDataLen);
        p.set(U8, offset(LAYOUT, "responder_resources"), (byte) responderResources);
        p.set(U8, offset(LAYOUT, "initiator_depth"), (byte) initiatorDepth);
        p.set(U8, offset(LAYOUT, "retry_count"), (byte) retryCount);
        p.set(U8, offset(LAYOUT, "rnr_retry_count"), (byte) rnrRetry);
    }

    /** {@code qp_num}: on a UD accept (SIDR reply), the QP the requester is to send to. */
    public static void qpNum(MemorySegment p, int qpNum) {
        p.set(U32, offset(LAYOUT, "qp_num"), qpNum);
    }

    public static MemorySegment privateData(MemorySegment p) { return p.get(PTR, offset(LAYOUT, "private_data")); }
    public static int privateDataLen(MemorySegment p) { return Byte.toUnsignedInt(p.get(U8, offset(LAYOUT, "private_data_len"))); }
    public static int responderResources(MemorySegment p) { return Byte.toUnsignedInt(p.get(U8, offset(LAYOUT, "responder_resources"))); }
    public static int initiatorDepth(MemorySegment p) { return Byte.toUnsignedInt(p.get(U8, offset(LAYOUT, "initiator_depth"))); }
}
