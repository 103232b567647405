package dev.jrdma.exceptions;

/**
 * Root of every exception jrdma throws. Unchecked: RDMA failures are rarely recoverable at the
 * call site, and the subclasses say what went wrong precisely enough to handle the ones that are.
 */
public class RdmaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RdmaException(String message) {
        super(message);
    }

    public RdmaException(String message, Throwable cause) {
        super(message, cause);
    }
}
