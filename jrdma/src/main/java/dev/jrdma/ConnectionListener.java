package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;

import java.time.Duration;

/**
 * What a client connection with a {@link ReconnectPolicy} tells about its life (see
 * {@link ConnectionConfig.Builder#reconnect(ReconnectPolicy, ConnectionListener)}). Each event
 * names the {@link Connection} the application holds, which stays the same object across
 * reconnects. Called on a jrdma thread (an IO thread or the reconnect timer): do not block in it.
 * A listener that throws is logged and otherwise ignored.
 *
 * <p>Nothing is replayed: the operations outstanding at a failure failed, each exactly once, before
 * {@link #failed} is called, and the application decides what to send again after
 * {@link #connected}.
 */
public interface ConnectionListener {
    /**
     * Established again, on attempt {@code attempt} (from 1) after a failure.
     *
     * @param connection the connection, the same object across reconnects
     * @param attempt the attempt that succeeded, from 1
     */
    default void connected(Connection connection, int attempt) {
    }

    /**
     * The connection failed (the peer left, the link or an operation failed); {@code cause} says why.
     *
     * @param connection the connection, the same object across reconnects
     * @param cause what caused it
     */
    default void failed(Connection connection, RdmaException cause) {
    }

    /**
     * Attempt {@code attempt} (from 1) starts after {@code delay}; operations meanwhile fail at once.
     *
     * @param connection the connection, the same object across reconnects
     * @param attempt the attempt about to start, from 1
     * @param delay the wait before it starts
     */
    default void reconnecting(Connection connection, int attempt, Duration delay) {
    }

    /**
     * The policy's attempts or time are used up (or the Rdma closed); {@code lastCause} is the last attempt's failure.
     * When the round's reconnects were made but each failed before it was healthy
     * ({@link ReconnectPolicy#healthyAfter}: a server that accepts and drops them), it is a
     * {@code ConnectionClosedException} saying so, whose cause is the last failure.
     *
     * @param connection the connection, the same object across reconnects
     * @param lastCause the last attempt's failure (or, after reconnects that were not healthy, one naming them)
     */
    default void gaveUp(Connection connection, RdmaException lastCause) {
    }

    /** A listener that hears nothing. */
    ConnectionListener NONE = new ConnectionListener() {
    };
}
