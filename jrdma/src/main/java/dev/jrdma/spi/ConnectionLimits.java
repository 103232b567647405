package dev.jrdma.spi;

/**
 * What a connection manager allows peers before they are connected: how many handshakes may be
 * unfinished at once (more wait in the kernel's backlog, not in our memory), and how long one may
 * take before it is dropped (a peer that connects and says nothing, or a byte a minute, costs a
 * socket for that long only).
 *
 * @param maxPendingHandshakes accepted connections whose handshake has not finished, at most (verbs: accepted
 *                             connections awaiting the client's RTU)
 * @param handshakeTimeoutNanos how long an accepted connection's client has for each handshake step (its first
 *                              message from the accept, its last from this side's answer; verbs: its RTU)
 * @param idleTimeoutNanos how long an established connection's peer may send nothing at all, not even a
 *                         keep-alive, before its connection ends (software providers); 0: never
 */
public record ConnectionLimits(int maxPendingHandshakes, long handshakeTimeoutNanos, long idleTimeoutNanos) {
    /** The default idle timeout: 2 minutes (a jrdma peer keeps an idle connection alive well within it). */
    public static final long DEFAULT_IDLE_TIMEOUT_NANOS = 120_000_000_000L;
    /** 128 unfinished handshakes, 5 s each; idle connections whose peer says nothing for 2 minutes end. */
    public static final ConnectionLimits DEFAULTS = new ConnectionLimits(128, 5_000_000_000L, DEFAULT_IDLE_TIMEOUT_NANOS);

    public ConnectionLimits {
        if (maxPendingHandshakes < 1) {
            throw new IllegalArgumentException("maxPendingHandshakes must be at least 1, not " + maxPendingHandshakes);
        }
        if (handshakeTimeoutNanos <= 0) {
            throw new IllegalArgumentException("the handshake timeout must be positive, not " + handshakeTimeoutNanos + " ns");
        }
        if (idleTimeoutNanos < 0) {
            throw new IllegalArgumentException("the idle timeout must be 0 (none) or positive, not " + idleTimeoutNanos + " ns");
        }
    }

    /** With the default idle timeout. */
    public ConnectionLimits(int maxPendingHandshakes, long handshakeTimeoutNanos) {
        this(maxPendingHandshakes, handshakeTimeoutNanos, DEFAULT_IDLE_TIMEOUT_NANOS);
    }
}
