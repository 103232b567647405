package dev.jrdma.exceptions;

/** Something did not happen within its configured time; the message names what and the limit. */
public class RdmaTimeoutException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * A timeout; {@code message} names what did not happen and the limit it had.
     *
     * @param message what happened, naming what was wrong
     */
    public RdmaTimeoutException(String message) {
        super(message);
    }
}
