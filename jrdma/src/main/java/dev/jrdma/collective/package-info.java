/**
 * Peer groups and collectives on the public API: a {@link dev.jrdma.collective.PeerGroup} of
 * any number of members (64 and more) forms through a rendezvous, gives each a rank, and runs
 * broadcast, all-to-all, all-gather, gather, scatter and barrier over one-sided writes; a member
 * that restarts joins again with its rank. {@link dev.jrdma.collective.RdmaLib} is rdma_lib's C
 * API (init, connect, accept, send and receive by peer index, broadcast, all-to-all) call for
 * call, for programs ported from it.
 *
 * <p>Built on {@code dev.jrdma} alone, as an application would build it.
 */
package dev.jrdma.collective;
