package dev.jrdma.exceptions;

/**
 * A posted operation completed with an error status. Carries the {@code ibv_wc_status} name
 * (e.g. {@code IBV_WC_RETRY_EXC_ERR}) and what the operation was.
 */
public class WorkCompletionException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The {@code ibv_wc_status} name. */
    private final String status;

    /**
     * {@code operation} completed with the error {@code status} (an {@code ibv_wc_status} name).
     *
     * @param operation the operation, for example {@code RDMA_WRITE}
     * @param status the {@code ibv_wc_status} name, for example {@code IBV_WC_REM_ACCESS_ERR}
     */
    public WorkCompletionException(String operation, String status) {
        this(operation, status, explain(status));
    }

    /**
     * For subclasses: {@code explanation} says in words what {@code status} means here.
     *
     * @param operation the operation, for example {@code RDMA_WRITE}
     * @param status the {@code ibv_wc_status} name, for example {@code IBV_WC_REM_ACCESS_ERR}
     * @param explanation what the status means here, in words
     */
    protected WorkCompletionException(String operation, String status, String explanation) {
        super(operation + " failed: " + status + (explanation.isEmpty() ? "" : " (" + explanation + ")"));
        this.status = status;
    }

    /** {@return the {@code ibv_wc_status} name} */
    public String status() {
        return status;
    }

    static String explain(String status) {
        return switch (status) {
            case "IBV_WC_REM_ACCESS_ERR" -> "the peer refused the access: wrong rkey, out of the region's bounds, "
                    + "or an access flag the region was not registered with";
            case "IBV_WC_REM_INV_REQ_ERR" -> "the peer found the request invalid: e.g. a message larger than its "
                    + "receive buffer, or an operation it does not support";
            case "IBV_WC_RETRY_EXC_ERR" -> "no answer from the peer within the retry budget: it is gone or unreachable";
            case "IBV_WC_RNR_RETRY_EXC_ERR" -> "the peer had no receive posted for a send, retries exhausted";
            case "IBV_WC_LOC_LEN_ERR" -> "an incoming message was larger than the receive buffer";
            case "IBV_WC_LOC_PROT_ERR" -> "a local buffer is not covered by its registration";
            case "IBV_WC_WR_FLUSH_ERR" -> "the connection went to error before the operation ran";
            default -> "";
        };
    }
}
