package dev.jrdma.exceptions;

/**
 * The peer refused a one-sided operation: wrong rkey, out of the region's bounds, an access
 * the region does not allow, or a region that was closed (revoked). The connection is in error
 * afterwards, as RC requires.
 */
public class RemoteAccessException extends WorkCompletionException {
    private static final long serialVersionUID = 1L;

    /**
     * {@code operation} (for example {@code RDMA_WRITE}) completed with the remote access error {@code status}.
     *
     * @param operation the operation, for example {@code RDMA_WRITE}
     * @param status the {@code ibv_wc_status} name, for example {@code IBV_WC_REM_ACCESS_ERR}
     */
    public RemoteAccessException(String operation, String status) {
        super(operation, status);
    }
}
