/**
 * Peer groups and collectives on the public API: a {@link dev.jrdma.collective.PeerGroup} of
 * any number of members (64 and more) forms through a rendezvous, gives each a rank, and runs
 * broadcast, all-to-all, all-gather, gather, scatter and barrier over one-sided writes; a member
 * that restarts joins again with its rank. {@link dev.jrdma.collective.RdmaLib} is rdma_lib's C
 * API (init, connect, accept, send and receive by peer index, broadcast, all-to-all) call for
 * call, for programs ported from it.
 *
 * <p>Built on {@code dev.jrdma} alone, as an application would build it. Inside, a group is its
 * mesh ({@code GroupMesh}: forming, who may take a rank, rejoins, the per-member inboxes), the
 * order of its collectives ({@code CollectiveOrder}: numbered, one after the other, waiting for a
 * member that is away), the steps they are made of ({@code CollectiveSteps}) and one class per
 * algorithm family ({@code Broadcast}, {@code AllToAll}, {@code GatherScatter}, {@code Barrier});
 * {@code GroupRendezvous} is a hosted group's rendezvous. Threads: the connections' callbacks run
 * on the {@code Rdma}'s IO threads and meet the callers of the collectives only in the mesh's
 * lock, the order's lock, and atomic or volatile fields.
 */
package dev.jrdma.collective;
