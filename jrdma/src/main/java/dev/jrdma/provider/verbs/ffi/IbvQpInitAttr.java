package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_qp_init_attr} with {@code struct ibv_qp_cap}: what a new QP is asked for. */
public final class IbvQpInitAttr {
    public static final StructLayout CAP = struct("ibv_qp_cap",
            U32.withName("max_send_wr"),
            U32.withName("max_recv_wr"),
            U32.withName("max_send_sge"),
            U32.withName("max_recv_sge"),
            U32.withName("max_inline_data"));

    public static final StructLayout LAYOUT = struct("ibv_qp_init_attr",
            PTR.withName("qp_context"),
            PTR.withName("send_cq"),
            PTR.withName("recv_cq"),
            PTR.withName("srq"),
            CAP.withName("cap"),
            INT.withName("qp_type"),
            INT.withName("sq_sig_all"));

    private IbvQpInitAttr() {
    }

    /**
     * Fills an init attr segment. {@code srq} may be NULL. Capacities are in/out: after
     * {@code ibv_create_qp} they hold what the device granted.
     */
    public static void set(MemorySegment a, MemorySegment sendCq, MemorySegment recvCq, MemorySegment srq,
                           int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData,
                           int qpType, boolean sqSigAll) {
        a.fill((byte) 0);
        a.set(PTR, offset(LAYOUT, "send_cq"), sendCq);
        a.set(PTR, offset(LAYOUT, "recv_cq"), recvCq);
        a.set(PTR, offset(LAYOUT, "srq"), srq);
        a.set(U32, offset(LAYOUT, "cap.max_send_wr"), maxSendWr);
        a.set(U32, offset(LAYOUT, "cap.max_recv_wr"), maxRecvWr);
        a.set(U32, offset(LAYOUT, "cap.max_send_sge"), maxSendSge);
        a.set(U32, offset(LAYOUT, "cap.max_recv_sge"), maxRecvSge);
        a.set(U32, offset(LAYOUT, "cap.max_inline_data"), maxInlineData);
        a.set(INT, offset(LAYOUT, "qp_type"), qpType);
        a.set(INT, offset(LAYOUT, "sq_sig_all"), sqSigAll ? 1 : 0);
    }

    public static int maxSendWr(MemorySegment a) { return a.get(U32, offset(LAYOUT, "cap.max_send_wr")); }
    public static int maxRecvWr(MemorySegment a) { return a.get(U32, offset(LAYOUT, "cap.max_recv_wr")); }
    public static int maxInlineData(MemorySegment a) { return a.get(U32, offset(LAYOUT, "cap.max_inline_data")); }
}
