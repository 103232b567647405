package dev.jrdma.exceptions;

/**
 * The peer refused a one-sided operation: wrong rkey, out of the region's bounds, an access
 * the region does not allow, or a region that was closed (revoked). The connection is in error
 * afterwards, as RC requires.
 */
public class RemoteAccessException extends WorkCompletionException {
    private static final long serialVersionUID = 1L;

    public RemoteAccessException(String operation, String status) {
        super(operation, status);
    }
}
