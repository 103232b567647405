package dev.jrdma.exceptions;

/** The connection is closed, or was when the operation would have run; the message says how. */
public class ConnectionClosedException extends RdmaException {
    private static final long serialVersionUID = 1L;

    public ConnectionClosedException(String message) {
        super(message);
    }

    public ConnectionClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
