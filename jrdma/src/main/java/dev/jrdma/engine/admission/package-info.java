/**
 * Admission: which connection requests a server takes, and when a source may try again. The
 * accept policy ({@code AcceptPolicy}: the source's wait, the auth token, the connection limits)
 * over the table of failed attempts and offences by source ({@code SourcePenalties}). Owned by
 * the thread that handles the connection manager's events (an {@code Rdma}'s IO thread 0):
 * nothing here is shared between threads. Internal: not exported.
 */
package dev.jrdma.engine.admission;
