package dev.jrdma;

/** Where a connection is in its life. */
public enum ConnectionState {
    CONNECTING,
    ESTABLISHED,
    /** An operation failed (or the device reported the QP fatal): the QP is in error, every later operation fails. */
    ERROR,
    CLOSED
}
