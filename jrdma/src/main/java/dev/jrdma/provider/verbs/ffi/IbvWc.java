package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct ibv_wc}: one work completion, read straight from the array {@code ibv_poll_cq}
 * fills; with the status, opcode and flag values. Every status is checked, never assumed.
 */
public final class IbvWc {
    public static final StructLayout LAYOUT = struct("ibv_wc",
            U64.withName("wr_id"),
            INT.withName("status"),
            INT.withName("opcode"),
            U32.withName("vendor_err"),
            U32.withName("byte_len"),
            union(null, BE32.withName("imm_data"), U32.withName("invalidated_rkey")),
            U32.withName("qp_num"),
            U32.withName("src_qp"),
            U32.withName("wc_flags"),
            U16.withName("pkey_index"),
            U16.withName("slid"),
            U8.withName("sl"),
            U8.withName("dlid_path_bits"));

    public static final long SIZE = LAYOUT.byteSize();

    /** {@code enum ibv_wc_status}, in order; index = value. Matches {@code ibv_wc_status_str}'s enum names. */
    private static final String[] STATUS_NAMES = {
        "IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE",
    };

    public static final int SUCCESS = 0, LOC_LEN_ERR = 1, LOC_QP_OP_ERR = 2, LOC_PROT_ERR = 4, WR_FLUSH_ERR = 5,
            LOC_ACCESS_ERR = 8, REM_INV_REQ_ERR = 9, REM_ACCESS_ERR = 10, REM_OP_ERR = 11, RETRY_EXC_ERR = 12,
            RNR_RETRY_EXC_ERR = 13, GENERAL_ERR = 21;

    /** {@code enum ibv_wc_opcode}. */
    public static final int OP_SEND = 0, OP_RDMA_WRITE = 1, OP_RDMA_READ = 2, OP_COMP_SWAP = 3, OP_FETCH_ADD = 4,
            OP_BIND_MW = 5, OP_LOCAL_INV = 6, OP_TSO = 7, OP_ATOMIC_WRITE = 9, OP_RECV = 1 << 7,
            OP_RECV_RDMA_WITH_IMM = (1 << 7) + 1;

    /** {@code enum ibv_wc_flags}. */
    public static final int WITH_GRH = 1, WITH_IMM = 1 << 1, WITH_INV = 1 << 3;

    private static final long WR_ID = offset(LAYOUT, "wr_id");
    private static final long STATUS = offset(LAYOUT, "status");
    private static final long OPCODE = offset(LAYOUT, "opcode");
    private static final long VENDOR_ERR = offset(LAYOUT, "vendor_err");
    private static final long BYTE_LEN = offset(LAYOUT, "byte_len");
    private static final long IMM_DATA = offset(LAYOUT, "imm_data");
    private static final long QP_NUM = offset(LAYOUT, "qp_num");
    private static final long WC_FLAGS = offset(LAYOUT, "wc_flags");

    private IbvWc() {
    }

    /** Completion {@code index} of an array of completions. */
    public static long wrId(MemorySegment wcs, int index) { return wcs.get(U64, index * SIZE + WR_ID); }
    public static int status(MemorySegment wcs, int index) { return wcs.get(INT, index * SIZE + STATUS); }
    public static int opcode(MemorySegment wcs, int index) { return wcs.get(INT, index * SIZE + OPCODE); }
    public static int vendorErr(MemorySegment wcs, int index) { return wcs.get(U32, index * SIZE + VENDOR_ERR); }
    public static int byteLen(MemorySegment wcs, int index) { return wcs.get(U32, index * SIZE + BYTE_LEN); }
    public static int qpNum(MemorySegment wcs, int index) { return wcs.get(U32, index * SIZE + QP_NUM); }
    public static int srcQp(MemorySegment wcs, int index) { return wcs.get(U32, index * SIZE + offset(LAYOUT, "src_qp")); }
    public static int wcFlags(MemorySegment wcs, int index) { return wcs.get(U32, index * SIZE + WC_FLAGS); }

    // The hot path's getters, by the completion's address (see AddressSpace).
    public static long wrIdAt(long wc) { return AddressSpace.getLong(wc + WR_ID); }
    public static int statusAt(long wc) { return AddressSpace.getInt(wc + STATUS); }
    public static int opcodeAt(long wc) { return AddressSpace.getInt(wc + OPCODE); }
    public static int byteLenAt(long wc) { return AddressSpace.getInt(wc + BYTE_LEN); }
    public static int qpNumAt(long wc) { return AddressSpace.getInt(wc + QP_NUM); }
    public static int wcFlagsAt(long wc) { return AddressSpace.getInt(wc + WC_FLAGS); }
    /** The immediate data in host order (see {@link #immData}). */
    public static int immDataAt(long wc) { return Integer.reverseBytes(AddressSpace.getInt(wc + IMM_DATA)); }

    /** The immediate data in host order (it travels in network order); valid when {@link #WITH_IMM} is set. */
    public static int immData(MemorySegment wcs, int index) { return wcs.get(BE32, index * SIZE + IMM_DATA); }

    /** The {@code enum ibv_wc_status} constant's name, e.g. {@code IBV_WC_REM_ACCESS_ERR}. */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS_NAMES.length ? STATUS_NAMES[status] : "IBV_WC_STATUS_" + status;
    }
}
