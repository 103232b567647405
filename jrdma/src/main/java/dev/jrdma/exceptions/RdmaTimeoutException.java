package dev.jrdma.exceptions;

/** Something did not happen within its configured time; the message names what and the limit. */
public class RdmaTimeoutException extends RdmaException {
    private static final long serialVersionUID = 1L;

    public RdmaTimeoutException(String message) {
        super(message);
    }
}
