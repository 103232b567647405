package dev.jrdma.spi;

/**
 * Completion status and opcode values: those of {@code enum ibv_wc_status} and
 * {@code enum ibv_wc_opcode}, which every provider reports in.
 */
public final class WorkCompletion {
    public static final int SUCCESS = 0, LOC_LEN_ERR = 1, LOC_QP_OP_ERR = 2, LOC_PROT_ERR = 4, WR_FLUSH_ERR = 5,
            REM_INV_REQ_ERR = 9, REM_ACCESS_ERR = 10, REM_OP_ERR = 11, RETRY_EXC_ERR = 12, RNR_RETRY_EXC_ERR = 13;

    public static final int OP_SEND = 0, OP_RDMA_WRITE = 1, OP_RDMA_READ = 2, OP_COMP_SWAP = 3, OP_FETCH_ADD = 4,
            OP_BIND_MW = 5, OP_FLUSH = 8,
            OP_RECV = 128, OP_RECV_RDMA_WITH_IMM = 129;

    private static final String[] STATUS = {"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE"};

    /** The highest {@code ibv_wc_status} value (IBV_WC_TM_RNDV_INCOMPLETE). */
    public static final int MAX_STATUS = STATUS.length - 1;

    private WorkCompletion() {
    }

    /** The completion opcode of a send-queue request of work request opcode {@code wrOpcode} ({@link QueuePair}'s). */
    public static int opcodeOf(int wrOpcode) {
        return switch (wrOpcode) {
            case QueuePair.WR_RDMA_WRITE, QueuePair.WR_RDMA_WRITE_WITH_IMM -> OP_RDMA_WRITE;
            case QueuePair.WR_RDMA_READ -> OP_RDMA_READ;
            case QueuePair.WR_ATOMIC_CMP_AND_SWP -> OP_COMP_SWAP;
            case QueuePair.WR_ATOMIC_FETCH_AND_ADD -> OP_FETCH_ADD;
            case QueuePair.WR_FLUSH -> OP_FLUSH;
            case QueuePair.WR_BIND_MW -> OP_BIND_MW;
            default -> OP_SEND;
        };
    }

    /** The {@code ibv_wc_status} name, e.g. {@code IBV_WC_REM_ACCESS_ERR}. */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS.length ? STATUS[status] : "IBV_WC_STATUS_" + status;
    }
}
