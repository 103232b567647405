package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct rdma_cm_id} with its {@code rdma_route} and {@code rdma_addr}: an rdma_cm
 * endpoint. After address resolution (or on a connect request) {@code verbs} is the device
 * context the id is bound to, and after {@code rdma_create_qp} {@code qp} is its queue pair.
 */
public final class RdmaCmId {
    /** {@code struct sockaddr_storage}: 128 bytes, 8-aligned. */
    static final MemoryLayout SOCKADDR_STORAGE = opaque(128, 8);

    static final StructLayout IB_ADDR = struct("rdma_ib_addr",
            IbvGidEntry.GID.withName("sgid"),
            IbvGidEntry.GID.withName("dgid"),
            BE16.withName("pkey"));

    static final StructLayout ADDR = struct("rdma_addr",
            union(null, SOCKADDR_STORAGE.withName("src_storage")),
            union(null, SOCKADDR_STORAGE.withName("dst_storage")),
            union(null, IB_ADDR.withName("ibaddr")).withName("addr"));

    static final StructLayout ROUTE = struct("rdma_route",
            ADDR.withName("addr"),
            PTR.withName("path_rec"),
            INT.withName("num_paths"));

    public static final StructLayout LAYOUT = struct("rdma_cm_id",
            PTR.withName("verbs"),
            PTR.withName("channel"),
            PTR.withName("context"),
            PTR.withName("qp"),
            ROUTE.withName("route"),
            INT.withName("ps"),
            U8.withName("port_num"),
            PTR.withName("event"),
            PTR.withName("send_cq_channel"),
            PTR.withName("send_cq"),
            PTR.withName("recv_cq_channel"),
            PTR.withName("recv_cq"),
            PTR.withName("srq"),
            PTR.withName("pd"),
            INT.withName("qp_type"));

    /** {@code enum rdma_port_space}: reliable connected (RC) and unreliable datagram. */
    public static final int PS_TCP = 0x0106, PS_UDP = 0x0111, PS_IB = 0x013F;

    private static final long VERBS = offset(LAYOUT, "verbs");
    private static final long QP = offset(LAYOUT, "qp");
    private static final long PORT_NUM = offset(LAYOUT, "port_num");
    private static final long SRC = offset(LAYOUT, "route.addr.src_storage");
    private static final long DST = offset(LAYOUT, "route.addr.dst_storage");

    private RdmaCmId() {
    }

    private static MemorySegment of(MemorySegment id) {
        return id.reinterpret(LAYOUT.byteSize());
    }

    /** The {@code ibv_context} the id is bound to, or NULL before address resolution. */
    public static MemorySegment verbs(MemorySegment id) { return of(id).get(PTR, VERBS); }
    public static MemorySegment qp(MemorySegment id) { return of(id).get(PTR, QP); }
    public static int portNum(MemorySegment id) { return Byte.toUnsignedInt(of(id).get(U8, PORT_NUM)); }

    /** The local address (struct sockaddr_storage) as bytes. */
    public static MemorySegment srcAddr(MemorySegment id) { return of(id).asSlice(SRC, 128); }

    /** The peer address (struct sockaddr_storage) as bytes. */
    public static MemorySegment dstAddr(MemorySegment id) { return of(id).asSlice(DST, 128); }
}
