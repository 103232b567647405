package dev.jrdma.collective;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.net.InetSocketAddress;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * A group of members connected in a full mesh, addressed by rank 0..n-1 (rdma_lib's peer
 * index), with collectives built on one-sided operations: the data of a collective moves with
 * RDMA WRITE straight into the receiving member's region, and a WRITE_WITH_IMM tells it that
 * its block is in place; nothing is copied on the receiving side.
 *
 * <p>Every member calls {@link #join} with the same member list and its own rank. Member r
 * listens on {@code members.get(r)}, connects to every lower rank and is connected to by every
 * higher one; members may start in any order within {@link GroupConfig#joinTimeout()}.
 *
 * <p>Collectives are called in the same order on every member (as in MPI) and run one after
 * the other on this member: one called before the last one ended starts when it ends. Each
 * returns a future, and has a blocking twin ({@code broadcastSync}, ...). A member that dies,
 * whose connection fails, or that does not answer within {@link GroupConfig#collectiveTimeout()}
 * fails the collective on every member that waits for it with a {@link CollectiveException}
 * naming its rank. A group that saw a failure is broken: later collectives fail at once, and
 * {@link #close()} is what is left to do.
 *
 * <p><b>Rejoining.</b> With a {@link GroupConfig#rejoinTimeout()}, a member whose connection is
 * lost (its process died or restarted) may come back: a process calls {@link #join} with the
 * same member list and the lost rank, the others take its connections again (the higher ranks
 * connect to it again, the lower ones accept it), and it numbers its collectives on from where
 * the others are. The collective running at the loss fails on the others, naming the rank; the
 * ones called while it is away wait for it (within the collective time-out) and then run with
 * it; nothing is replayed. Failures do not break such a group; a member that does not come back
 * within the rejoin time-out does. (A member of a {@linkplain #hostAsync hosted} group rejoins the
 * same way, with the member list and rank it was given: {@link #members()} and {@link #rank()}.)
 *
 * <p><b>Who may take a rank.</b> A rank is taken by the first connection that claims it and
 * passes the checks below; while that connection is established a second claim of the rank is
 * refused (logged) and does not displace it. With a {@link GroupConfig#secret() secret}, a
 * connection must prove it before it is given a rank: the connector presents an HMAC-SHA256 keyed
 * with the secret (its first 96 bits, bound to the group and the member it connects to) as its
 * auth token, which the listener checks in constant time before any connection exists, and the
 * acceptor answers with one of its own, which the connector checks; a hosted group's rendezvous
 * does the same, so no rank goes to a process without the secret. The proofs are not the secret, but they are the same every time:
 * one who sees them on the wire can replay them to the same member (across networks you do not
 * trust, run the group in a VPN or an IPsec/WireGuard tunnel). <b>A group without a secret
 * trusts its network and this host:</b> a rank is given to the first connection that claims it
 * from that member's host as the member list names it (its address; for a member listed at an
 * address of this host, any address of this host), so any process on a member's host, or one
 * that can send from its address, can take that member's rank before the member does (the member
 * then fails to join), and a hosted group gives its ranks to the first processes that reach the
 * rendezvous. A member of a group with a secret may connect from any address (multi-homed hosts).
 *
 * <p><b>Budgets.</b> A message a member sends before this member asks for it (it started the
 * collective first) is kept until asked for, up to {@link GroupConfig#inboxMessages()} messages
 * (default {@value GroupConfig#DEFAULT_INBOX_MESSAGES}) and {@link GroupConfig#inboxBytes()} bytes
 * (default 4 MiB) per member; honest members are at most a collective or two ahead and keep a few.
 * Past the budget, or on a message no member sends (an unknown kind, a descriptor longer than
 * 64 bytes, a second copy of one not yet asked for), the member's connection is failed: what
 * waits for it fails with a {@link CollectiveException} naming it and what it sent, and the
 * connection is closed (a rejoining group waits for the member to join again). Messages kept for a collective that ended here are dropped when the next
 * one starts.
 *
 * <p>The parts: {@link GroupMesh} (forming, ranks, rejoins, inboxes), {@link CollectiveOrder}
 * (numbering and running collectives one after the other), {@link CollectiveSteps} and the
 * algorithm families ({@link Broadcast}, {@link AllToAll}, {@link GatherScatter}, {@link Barrier}).
 *
 * <p>The {@code Rdma} must have an IO thread (not {@code ioThreads(Rdma.INLINE)}): collectives
 * proceed in completion callbacks while the caller waits. Several members may share one
 * {@code Rdma} (each listens on its own address).
 */
public final class PeerGroup implements AutoCloseable {
    private final GroupMesh mesh;
    private final CollectiveOrder order;
    private final CollectiveSteps steps;

    private PeerGroup(Rdma rdma, List<InetSocketAddress> members, int rank, GroupConfig config) {
        this.mesh = new GroupMesh(rdma, members, rank, config);
        this.order = new CollectiveOrder(mesh);
        this.steps = new CollectiveSteps(mesh);
    }

    // ---------------------------------------------------------------- forming

    /**
     * {@link #joinAsync} with {@link GroupConfig#defaults()}, waiting for the whole mesh.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param members every member's address, by rank
     * @param rank the rank, 0 to the group's size - 1
     * @return the group, formed
     */
    public static PeerGroup join(Rdma rdma, List<InetSocketAddress> members, int rank) {
        return join(rdma, members, rank, GroupConfig.defaults());
    }

    /**
     * {@link #joinAsync}, waiting for the whole mesh; its failure is thrown as it is.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param members every member's address, by rank
     * @param rank the rank, 0 to the group's size - 1
     * @param config how the group forms and how long its collectives wait
     * @return the group, formed
     */
    public static PeerGroup join(Rdma rdma, List<InetSocketAddress> members, int rank, GroupConfig config) {
        return await(joinAsync(rdma, members, rank, config));
    }

    /**
     * Joins the group as member {@code rank}: listens on {@code members.get(rank)}, connects to
     * the lower ranks (retrying until they listen) and accepts the higher ones. The future
     * completes when every member is connected, or fails with a {@link CollectiveException}
     * naming a rank still missing after {@link GroupConfig#joinTimeout()} (this member's
     * connections and listener are closed then).
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param members every member's address, by rank
     * @param rank the rank, 0 to the group's size - 1
     * @param config how the group forms and how long its collectives wait
     * @return a future of the group, once formed; exceptionally a {@link CollectiveException} when it could not
     *     form in time
     * @throws IllegalArgumentException for a member list with duplicates or fewer than one
     *         member, a rank outside it, or an {@code Rdma} without an IO thread
     */
    public static CompletableFuture<PeerGroup> joinAsync(Rdma rdma, List<InetSocketAddress> members, int rank, GroupConfig config) {
        Objects.requireNonNull(rdma, "rdma");
        Objects.requireNonNull(members, "members");
        Objects.requireNonNull(config, "config");
        if (members.isEmpty()) {
            throw new IllegalArgumentException("PeerGroup: the member list is empty");
        }
        if (rank < 0 || rank >= members.size()) {
            throw new IllegalArgumentException("PeerGroup: rank " + rank + " is not a rank of a group of " + members.size()
                    + " (0.." + (members.size() - 1) + ")");
        }
        HashSet<InetSocketAddress> seen = new HashSet<>();
        for (int i = 0; i < members.size(); i++) {
            InetSocketAddress a = Objects.requireNonNull(members.get(i), "members[" + i + "]");
            if (a.isUnresolved() || a.getPort() == 0) {
                throw new IllegalArgumentException("PeerGroup: members[" + i + "] = " + a
                        + " must be a resolved address with a port (every member must know where the others listen)");
            }
            if (!seen.add(a)) {
                throw new IllegalArgumentException("PeerGroup: members[" + i + "] = " + a + " is listed twice");
            }
        }
        if (rdma.ioThreadIds().length == 0) {
            throw new IllegalArgumentException("PeerGroup: the Rdma was built with ioThreads(Rdma.INLINE): a collective proceeds"
                    + " in completion callbacks while its caller waits, which needs an IO thread (ioThreads(1) or more)");
        }
        PeerGroup g = new PeerGroup(rdma, members, rank, config);
        return g.form();
    }

    /**
     * Rank 0 of a group grown by accepting its members (rdma_lib's server): listens at
     * {@code rendezvous} until {@code size - 1} members have come ({@link #joinViaAsync}), gives
     * them ranks 1.. in the order they came and the member list, then forms the mesh like
     * {@link #joinAsync} (rank 0 listening at {@code rendezvous} again). Fails with a
     * {@link CollectiveException} when the members do not all come within the join time-out.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param rendezvous the address rank 0 listens on for the members to come
     * @param size the number of members, rank 0 included
     * @param config how the group forms and how long its collectives wait
     * @return a future of the group, once formed; exceptionally a {@link CollectiveException} when it could not
     *     form in time
     */
    public static CompletableFuture<PeerGroup> hostAsync(Rdma rdma, InetSocketAddress rendezvous, int size, GroupConfig config) {
        Objects.requireNonNull(rdma, "rdma");
        Objects.requireNonNull(rendezvous, "rendezvous");
        Objects.requireNonNull(config, "config");
        return GroupRendezvous.host(rdma, rendezvous, size, config);
    }

    /**
     * {@link #hostAsync} with the default config, waiting until the group has formed.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param rendezvous the address rank 0 listens on for the members to come
     * @param size the number of members, rank 0 included
     * @return the group, formed
     */
    public static PeerGroup host(Rdma rdma, InetSocketAddress rendezvous, int size) {
        return await(hostAsync(rdma, rendezvous, size, GroupConfig.defaults()));
    }

    /**
     * {@return a member of a group that rank 0 {@linkplain #hostAsync hosts}: connects to {@code
     * rendezvous} (again while rank 0 is not there yet) telling it {@code listenOn}, the address this
     * member will listen on, gets its rank and the member list, then joins the mesh}
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param rendezvous the address rank 0 listens on for the members to come
     * @param listenOn the address this member listens on for the others
     * @param config how the group forms and how long its collectives wait
     */
    public static CompletableFuture<PeerGroup> joinViaAsync(Rdma rdma, InetSocketAddress rendezvous, InetSocketAddress listenOn,
                                                          GroupConfig config) {
        Objects.requireNonNull(rdma, "rdma");
        Objects.requireNonNull(rendezvous, "rendezvous");
        Objects.requireNonNull(listenOn, "listenOn");
        Objects.requireNonNull(config, "config");
        if (listenOn.isUnresolved() || listenOn.getPort() == 0) {
            throw new IllegalArgumentException("PeerGroup.joinVia: listenOn = " + listenOn + " must be a resolved address with a port");
        }
        return GroupRendezvous.join(rdma, rendezvous, listenOn, config);
    }

    /**
     * {@link #joinViaAsync} with the default config, waiting until the group has formed.
     *
     * @param rdma the {@code Rdma} the connections are made on
     * @param rendezvous the address rank 0 listens on for the members to come
     * @param listenOn the address this member listens on for the others
     * @return the group, formed
     */
    public static PeerGroup joinVia(Rdma rdma, InetSocketAddress rendezvous, InetSocketAddress listenOn) {
        return await(joinViaAsync(rdma, rendezvous, listenOn, GroupConfig.defaults()));
    }

    /** Forms the mesh, then learns from the others' SYNC where the collectives' count is; on failure closes what was made. */
    private CompletableFuture<PeerGroup> form() {
        GroupConfig config = mesh.config;
        long deadline = System.nanoTime() + config.joinTimeout().toNanos();
        CompletableFuture<Void> meshed;
        try {
            meshed = mesh.form(deadline);
        } catch (CollectiveException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<PeerGroup> done = new CompletableFuture<>();
        meshed.thenCompose(v -> order.synced())
                .orTimeout(config.joinTimeout().toNanos(), TimeUnit.NANOSECONDS)
                .whenComplete((v, e) -> {
                    if (e == null) {
                        done.complete(this);
                        return;
                    }
                    CollectiveException why = mesh.joinFailure(e);
                    close();
                    done.completeExceptionally(why);
                });
        return done;
    }

    // ---------------------------------------------------------------- who

    /** {@return this member's rank} */
    public int rank() {
        return mesh.rank;
    }

    /** {@return how many members the group has} */
    public int size() {
        return mesh.size;
    }

    /**
     * The connection to member {@code r} (rdma_lib's peer index), for operations of one's own; null while a lost member is away.
     *
     * @param r the rank of another member
     * @return this connection
     */
    public Connection connection(int r) {
        checkRank("connection", r);
        if (r == mesh.rank) {
            throw new IllegalArgumentException("connection: rank " + r + " is this member");
        }
        return mesh.connection(r);
    }

    /**
     * {@return the ranks the collective running on this member now still waits for (a message to arrive, a
     * write to complete), lowest first; empty when none runs} The member a stalled collective names here
     * is the one holding it up; its time-out names the lowest.
     */
    public java.util.SortedSet<Integer> waitingFor() {
        CollectiveRun r = order.running();
        return r == null ? java.util.Collections.emptySortedSet() : r.waitingFor();
    }

    /**
     * {@return the {@code Rdma} this member's connections run on (allocate the collectives' regions from
     * it)}
     */
    public Rdma rdma() {
        return mesh.rdma;
    }

    /** {@return the member list the group was formed from} */
    public List<InetSocketAddress> members() {
        return mesh.members;
    }

    // ---------------------------------------------------------------- collectives

    /**
     * Copies {@code region} of member {@code root} into {@code region} of every other member
     * (each member's region at least as long as root's).
     *
     * @param root the rank the data comes from or goes to
     * @param region the region: root's is copied into every other member's
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> broadcast(int root, LocalRegion region) {
        checkRank("broadcast: root", root);
        Objects.requireNonNull(region, "region");
        return order.run("broadcast", run -> Broadcast.run(steps, run, root, region));
    }

    /**
     * {@link #broadcast}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     *
     * @param root the rank the data comes from or goes to
     * @param region the region: root's is copied into every other member's
     */
    public void broadcastSync(int root, LocalRegion region) {
        await(broadcast(root, region));
    }

    /**
     * {@link #allToAll(LocalRegion, LocalRegion, int, AllToAllAlgorithm)} with {@link AllToAllAlgorithm#PAIRWISE}.
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> allToAll(LocalRegion send, LocalRegion recv, int blockSize) {
        return allToAll(send, recv, blockSize, AllToAllAlgorithm.PAIRWISE);
    }

    /**
     * Block j of this member's {@code send} goes to member j, where it lands as block
     * {@code rank()} of {@code recv}: both regions hold {@code size() * blockSize} bytes.
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @param algorithm how the blocks travel: {@link AllToAllAlgorithm#PAIRWISE} or through rank 0
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> allToAll(LocalRegion send, LocalRegion recv, int blockSize, AllToAllAlgorithm algorithm) {
        Objects.requireNonNull(algorithm, "algorithm");
        checkBlocks("allToAll", "send", send, blockSize, mesh.size);
        checkBlocks("allToAll", "recv", recv, blockSize, mesh.size);
        checkApart("allToAll", send, recv);
        if (algorithm == AllToAllAlgorithm.SEQUENTIAL) {
            return order.run("allToAll(SEQUENTIAL)", run -> AllToAll.sequential(steps, run, send, recv, blockSize));
        }
        return order.run("allToAll(PAIRWISE)", run -> AllToAll.pairwise(steps, run, send, recv, blockSize));
    }

    /**
     * {@link #allToAll(LocalRegion, LocalRegion, int)}, waiting in the caller (a failure is thrown: a
     * {@link CollectiveException} naming the rank).
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     */
    public void allToAllSync(LocalRegion send, LocalRegion recv, int blockSize) {
        await(allToAll(send, recv, blockSize));
    }

    /**
     * {@link #allToAll(LocalRegion, LocalRegion, int, AllToAllAlgorithm)}, waiting in the caller (a
     * failure is thrown: a {@link CollectiveException} naming the rank).
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @param algorithm how the blocks travel: {@link AllToAllAlgorithm#PAIRWISE} or through rank 0
     */
    public void allToAllSync(LocalRegion send, LocalRegion recv, int blockSize, AllToAllAlgorithm algorithm) {
        await(allToAll(send, recv, blockSize, algorithm));
    }

    /**
     * Every member's {@code send} block ({@code blockSize} bytes) lands as block {@code rank} of every member's {@code recv}.
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> allGather(LocalRegion send, LocalRegion recv, int blockSize) {
        checkBlocks("allGather", "send", send, blockSize, 1);
        checkBlocks("allGather", "recv", recv, blockSize, mesh.size);
        checkApart("allGather", send, recv);
        return order.run("allGather", run -> GatherScatter.allGather(steps, run, send, recv, blockSize));
    }

    /**
     * {@link #allGather}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     *
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     */
    public void allGatherSync(LocalRegion send, LocalRegion recv, int blockSize) {
        await(allGather(send, recv, blockSize));
    }

    /**
     * Every member's {@code send} block lands as block {@code rank} of {@code root}'s
     * {@code recv} ({@code size() * blockSize} bytes; other members may pass null).
     *
     * @param root the rank the data comes from or goes to
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> gather(int root, LocalRegion send, LocalRegion recv, int blockSize) {
        checkRank("gather: root", root);
        checkBlocks("gather", "send", send, blockSize, 1);
        if (mesh.rank == root) {
            checkBlocks("gather", "recv", recv, blockSize, mesh.size);
        }
        return order.run("gather", run -> GatherScatter.gather(steps, run, root, send, recv, blockSize));
    }

    /**
     * {@link #gather}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     *
     * @param root the rank the data comes from or goes to
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     */
    public void gatherSync(int root, LocalRegion send, LocalRegion recv, int blockSize) {
        await(gather(root, send, recv, blockSize));
    }

    /**
     * Block j of {@code root}'s {@code send} ({@code size() * blockSize} bytes; other members
     * may pass null) lands in member j's {@code recv} ({@code blockSize} bytes).
     *
     * @param root the rank the data comes from or goes to
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> scatter(int root, LocalRegion send, LocalRegion recv, int blockSize) {
        checkRank("scatter: root", root);
        checkBlocks("scatter", "recv", recv, blockSize, 1);
        if (mesh.rank == root) {
            checkBlocks("scatter", "send", send, blockSize, mesh.size);
        }
        return order.run("scatter", run -> GatherScatter.scatter(steps, run, root, send, recv, blockSize));
    }

    /**
     * {@link #scatter}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     *
     * @param root the rank the data comes from or goes to
     * @param send this member's blocks to send
     * @param recv where this member's blocks arrive
     * @param blockSize the bytes of one block
     */
    public void scatterSync(int root, LocalRegion send, LocalRegion recv, int blockSize) {
        await(scatter(root, send, recv, blockSize));
    }

    /**
     * Completes once every member has called it (this collective number on each).
     *
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> barrier() {
        return order.run("barrier", run -> Barrier.run(steps, run));
    }

    /**
     * {@link #barrier}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     */
    public void barrierSync() {
        await(barrier());
    }

    private void checkRank(String what, int r) {
        if (r < 0 || r >= mesh.size) {
            int size = mesh.size;
            throw new IllegalArgumentException(what + " " + r + " is not a rank of this group of " + size + " (0.." + (size - 1) + ")");
        }
    }

    private static void checkBlocks(String op, String name, LocalRegion region, int blockSize, int blocks) {
        Objects.requireNonNull(region, op + ": " + name);
        if (blockSize <= 0) {
            throw new IllegalArgumentException(op + ": blockSize must be positive, not " + blockSize);
        }
        long need = (long) blockSize * blocks;
        if (region.length() < need) {
            throw new IllegalArgumentException(op + ": " + name + " is " + region.length() + " bytes, " + blocks + " block"
                    + (blocks == 1 ? "" : "s") + " of " + blockSize + " need " + need);
        }
    }

    /** Peers write into recv while this member still sends from send: the two must not overlap. */
    private static void checkApart(String op, LocalRegion send, LocalRegion recv) {
        long s0 = send.address(), s1 = s0 + send.length(), r0 = recv.address(), r1 = r0 + recv.length();
        if (s0 < r1 && r0 < s1) {
            throw new IllegalArgumentException(op + ": send and recv overlap (in place is not supported: peers write into recv"
                    + " while this member still sends from send)");
        }
    }

    /** Waits for a collective; its failure is thrown as it is (a {@link CollectiveException} for a member's failure). */
    static <T> T await(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        }
    }

    /** Closes every connection of the group and its listener; a collective still running fails. */
    @Override
    public void close() {
        if (order.close()) {
            mesh.closeAll(toString());
        }
    }

    @Override
    public String toString() {
        return "PeerGroup[rank " + mesh.rank + " of " + mesh.size + ", " + mesh.members.get(mesh.rank) + (mesh.closed ? ", closed" : "")
                + (mesh.broken != null ? ", broken" : "") + "]";
    }
}
