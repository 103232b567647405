package dev.jrdma.spi;

/**
 * What a connection manager allows peers before they are connected: how many handshakes may be
 * unfinished at once (more wait in the kernel's backlog, not in our memory), and how long one may
 * take before it is dropped (a peer that connects and says nothing, or a byte a minute, costs a
 * socket for that long only).
 *
 * @param maxPendingHandshakes accepted connections whose handshake has not finished, at most
 * @param handshakeTimeoutNanos how long an accepted connection's client has for each handshake step (its first
 *                              message from the accept, its last from this side's answer)
 */
public record ConnectionLimits(int maxPendingHandshakes, long handshakeTimeoutNanos) {
    /** 128 unfinished handshakes, 5 s each. */
    public static final ConnectionLimits DEFAULTS = new ConnectionLimits(128, 5_000_000_000L);

    public ConnectionLimits {
        if (maxPendingHandshakes < 1) {
            throw new IllegalArgumentException("maxPendingHandshakes must be at least 1, not " + maxPendingHandshakes);
        }
        if (handshakeTimeoutNanos <= 0) {
            throw new IllegalArgumentException("the handshake timeout must be positive, not " + handshakeTimeoutNanos + " ns");
        }
    }
}
