package dev.jrdma.netty;

import java.io.IOException;

/**
 * The peer broke the stream's protocol ({@link StreamMessage}): the connection is ended, and the
 * channel's pipeline hears of it through {@code exceptionCaught}. Only that connection pays.
 */
public final class StreamProtocolException extends IOException {
    private static final long serialVersionUID = 1L;

    StreamProtocolException(String message) {
        super(message);
    }
}
