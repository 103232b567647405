/**
 * Admission: who may try to connect, and when. Per source address, the failed attempts and
 * offences that make it wait before its next request is looked at ({@code SourcePenalties}).
 * Owned by the thread that handles the connection manager's events (an {@code Rdma}'s IO thread
 * 0): nothing here is shared between threads. Internal: not exported.
 */
package dev.jrdma.engine.admission;
