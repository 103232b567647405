package dev.jrdma.exceptions;

/** The peer refused the connection (nobody listening, wrong auth token, server closing); the message says which. */
public class ConnectionRejectedException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * The peer refused; {@code message} says which of the reasons it was.
     *
     * @param message what happened, naming what was wrong
     */
    public ConnectionRejectedException(String message) {
        super(message);
    }
}
