package dev.jrdma.exceptions;

/** The connection is closed, or was when the operation would have run; the message says how. */
public class ConnectionClosedException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * The connection closed; {@code message} says how (closed here, by the peer, or failed, and when).
     *
     * @param message what happened, naming what was wrong
     */
    public ConnectionClosedException(String message) {
        super(message);
    }

    /**
     * The connection closed because of {@code cause}; {@code message} says how.
     *
     * @param message what happened, naming what was wrong
     * @param cause what caused it
     */
    public ConnectionClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
