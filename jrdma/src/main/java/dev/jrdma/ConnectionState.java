package dev.jrdma;

/** Where a connection is in its life. */
public enum ConnectionState {
    /** Connecting: the connection manager is at work (also while a reconnect policy connects again). */
    CONNECTING,
    /** Up: operations may be posted. */
    ESTABLISHED,
    /** An operation failed (or the device reported the QP fatal): the QP is in error, every later operation fails. */
    ERROR,
    /** Closed, here or by the peer, or connecting failed: every operation has completed. */
    CLOSED
}
