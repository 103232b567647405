package dev.jrdma.exceptions;

/**
 * Root of every exception jrdma throws. Unchecked: RDMA failures are rarely recoverable at the
 * call site, and the subclasses say what went wrong precisely enough to handle the ones that are.
 */
public class RdmaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A failure; {@code message} names what was wrong.
     *
     * @param message what happened, naming what was wrong
     */
    public RdmaException(String message) {
        super(message);
    }

    /**
     * A failure caused by {@code cause}; {@code message} names what was wrong.
     *
     * @param message what happened, naming what was wrong
     * @param cause what caused it
     */
    public RdmaException(String message, Throwable cause) {
        super(message, cause);
    }
}
