package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.BARRIER;
import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.DATA2;
import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.READY2;
import static dev.jrdma.collective.GroupWireDescriptor.SYNC;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import dev.jrdma.ConnectionState;
import dev.jrdma.Access;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReferenceArray;

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
 * <p>The {@code Rdma} must have an IO thread (not {@code ioThreads(Rdma.INLINE)}): collectives
 * proceed in completion callbacks while the caller waits. Several members may share one
 * {@code Rdma} (each listens on its own address).
 */
public final class PeerGroup implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    private final Rdma rdma;
    private final List<InetSocketAddress> members;
    private final int rank, size, groupId;
    private final GroupConfig config;
    private final AtomicReferenceArray<Connection> peers;
    private final AtomicReferenceArray<PeerInbox> inbox;
    private final List<CompletableFuture<Connection>> joined = new ArrayList<>();
    private final List<CompletableFuture<Connection>> connecting = new ArrayList<>();
    /** Per lower rank, why the last connect to it did not make the connection (for the join's failure). */
    private final java.util.concurrent.atomic.AtomicReferenceArray<String> lastAnswer;
    /** The collective started last (collectives run one after another). */
    private volatile CollectiveRun running;
    private RdmaServer server;
    private final Object lock = new Object();
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private long collectives;
    /** The number of the last collective this member started (or failed at once); what SYNC tells a member. */
    private volatile long started;
    /** The connections' config with the group's hello, for the connects of forming and of rejoins (see {@link #connectConfig}). */
    private ConnectionConfig mine;
    /** Whether a message without immediate value was logged already (one line, not one per message of a flood). */
    private volatile boolean toldNoImm;
    /** Ranks whose connection was lost once: their next registration is a rejoin. */
    private final boolean[] lostOnce;
    /** Per rank, how often it was lost: a rejoin deadline is about one loss, not a later one. */
    private final int[] losses;
    /** Complete while every member is connected; a new one is made when one is lost (rejoining groups). */
    private volatile CompletableFuture<Void> whole = CompletableFuture.completedFuture(null);
    private volatile CollectiveException broken;
    private volatile boolean closed;

    private PeerGroup(Rdma rdma, List<InetSocketAddress> members, int rank, GroupConfig config) {
        this.rdma = rdma;
        this.members = List.copyOf(members);
        this.rank = rank;
        this.size = members.size();
        this.config = config;
        this.groupId = GroupWireDescriptor.groupId(this.members);
        this.peers = new AtomicReferenceArray<>(size);
        this.inbox = new AtomicReferenceArray<>(size);
        this.lostOnce = new boolean[size];
        this.losses = new int[size];
        this.lastAnswer = new java.util.concurrent.atomic.AtomicReferenceArray<>(size);
        for (int i = 0; i < size; i++) {
            inbox.set(i, newInbox());
            joined.add(new CompletableFuture<>());
        }
        joined.get(rank).complete(null);
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

    private CompletableFuture<PeerGroup> form() {
        long deadline = System.nanoTime() + config.joinTimeout().toNanos();
        mine = config.connection().toBuilder()
                .privateData(GroupWireDescriptor.hello(groupId, rank, size)).build();
        try {
            if (rank < size - 1) {
                server = rdma.listen(members.get(rank), listenConfig(), this::accepted);
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(new CollectiveException(rank, "PeerGroup: rank " + rank + " cannot listen on "
                    + members.get(rank) + ": " + e.getMessage(), e));
        }
        for (int j = 0; j < rank; j++) {
            connect(j, deadline, 0);
        }
        CompletableFuture<PeerGroup> done = new CompletableFuture<>();
        CompletableFuture.allOf(joined.toArray(CompletableFuture[]::new))
                .thenCompose(v -> synced())
                .orTimeout(config.joinTimeout().toNanos(), TimeUnit.NANOSECONDS)
                .whenComplete((v, e) -> {
                    if (e == null) {
                        done.complete(this);
                        return;
                    }
                    CollectiveException why = joinFailure(e);
                    close();
                    done.completeExceptionally(why);
                });
        return done;
    }

    /**
     * Every other member's SYNC: this member's collectives go on from the highest number the
     * others started (0 in a group forming for the first time; a member rejoining after a
     * restart learns where the rest of the group is).
     */
    private CompletableFuture<Void> synced() {
        List<CompletableFuture<byte[]>> syncs = new ArrayList<>();
        for (int p : others()) {
            syncs.add(inbox.get(p).expect(imm(SYNC, 0)));
        }
        return all(syncs).thenRun(() -> {
            long highest = 0;
            for (CompletableFuture<byte[]> f : syncs) {
                byte[] b = f.join();
                if (b.length == Long.BYTES) {
                    highest = Math.max(highest, java.nio.ByteBuffer.wrap(b).getLong());
                }
            }
            synchronized (lock) {
                if (highest > collectives) {
                    collectives = highest;
                    started = highest;
                }
            }
        });
    }

    private CollectiveException joinFailure(Throwable e) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof CollectiveException ce) {
            return ce;
        }
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (!joined.get(i).isDone()) {
                missing.add(i);
            }
        }
        int first = missing.isEmpty() ? -1 : missing.get(0);
        return new CollectiveException(first, "PeerGroup: rank " + rank + " of " + size + " has no connection with rank"
                + (missing.size() == 1 ? " " + first + " (" + members.get(first) + ")" : "s " + missing)
                + " after " + config.joinTimeout().toMillis() + " ms: is every member started with the same member list?"
                + (first >= 0 && lastAnswer.get(first) != null ? " (last try: " + lastAnswer.get(first) + ")" : ""),
                new RdmaTimeoutException("join timed out"));
    }

    /**
     * This member's listener: its hello and, with a secret, the proof that it is this rank's member
     * after it; the connect proof meant for this rank is what it expects as the auth token.
     */
    private ConnectionConfig listenConfig() {
        if (!config.hasSecret()) {
            return mine;
        }
        byte[] hello = GroupWireDescriptor.hello(groupId, rank, size);
        byte[] accept = GroupProof.meshAccept(config.secretRef(), groupId, size, rank);
        byte[] d = java.util.Arrays.copyOf(hello, hello.length + accept.length);
        System.arraycopy(accept, 0, d, hello.length, accept.length);
        return mine.toBuilder().privateData(d).authToken(GroupProof.meshConnect(config.secretRef(), groupId, size, rank)).build();
    }

    /** The config to connect to lower rank {@code j} with: the hello, and with a secret the proof for {@code j}. */
    private ConnectionConfig connectConfig(int j) {
        return config.hasSecret() ? mine.toBuilder().authToken(GroupProof.meshConnect(config.secretRef(), groupId, size, j)).build()
                : mine;
    }

    /** Connects to lower rank {@code j}, again every so often while it does not listen yet. */
    private void connect(int j, long deadline, int attempt) {
        if (closed || peers.get(j) != null) {
            return;
        }
        CompletableFuture<Connection> f;
        try {
            f = rdma.connectAsync(members.get(j), connectConfig(j));
        } catch (RuntimeException e) {
            joined.get(j).completeExceptionally(new CollectiveException(j, "PeerGroup: cannot connect to rank " + j
                    + " at " + members.get(j) + ": " + e.getMessage(), e));
            return;
        }
        synchronized (connecting) {
            connecting.add(f);
        }
        if (closed) {
            f.thenAccept(Connection::close);   // close() may have looked at connecting before f was in it
        }
        f.whenComplete((c, e) -> {
            Throwable why = e;
            if (e == null) {
                int said = -1;
                try {
                    said = GroupWireDescriptor.helloRank(c.peerPrivateData(), groupId, size);
                    if (config.hasSecret() && !GroupProof.holds(c.peerPrivateData(), GroupWireDescriptor.HELLO_BYTES,
                            GroupProof.meshAccept(config.secretRef(), groupId, size, j))) {
                        said = -1;
                        throw new IllegalArgumentException("the listener there does not prove the group secret for rank " + j);
                    }
                } catch (IllegalArgumentException bad) {
                    // Something else listens there, e.g. rank 0's rendezvous not yet closed
                    // (PeerGroup.host): not the member yet, try again.
                    c.close();
                    why = bad;
                }
                if (said >= 0 && said != j) {
                    c.close();
                    joined.get(j).completeExceptionally(new CollectiveException(j, "PeerGroup: " + members.get(j)
                            + " says it is rank " + said + ", the member list has it as rank " + j));
                    return;
                }
                if (said == j) {
                    register(j, c);
                    return;
                }
            }
            lastAnswer.set(j, members.get(j) + " answered: " + (why.getCause() != null && why instanceof CompletionException
                    ? why.getCause().getMessage() : why.getMessage()));
            // Not listening yet (it starts later): try again until the group's time to form runs out.
            long wait = Math.min(500, 20L << Math.min(attempt, 5));
            if (System.nanoTime() + wait * 1_000_000 < deadline && !closed) {
                CompletableFuture.delayedExecutor(wait, TimeUnit.MILLISECONDS)
                        .execute(() -> connect(j, deadline, attempt + 1));
            }
        });
    }

    /** On the IO thread: a higher rank connected. */
    private void accepted(Connection c) {
        int from;
        try {
            from = GroupWireDescriptor.helloRank(c.peerPrivateData(), groupId, size);
        } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: refused a connection from {1}: {2}", rank,
                    c.remoteAddress(), e.getMessage());
            c.close();
            return;
        }
        if (from <= rank) {
            LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: refused a connection from {1} as rank {2}: {3}", rank,
                    c.remoteAddress(), from, "lower ranks are connected to, not accepted");
            c.close();
            return;
        }
        if (!config.hasSecret() && !MemberAddress.mayClaim(c.remoteAddress().getAddress(), members.get(from).getAddress())) {
            // Without a secret the member list is all there is to go by: rank r is its member's host's.
            LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: refused a connection from {1} as rank {2}: the member"
                    + " list has rank {2} at {3} (a group without a secret takes a rank only from its member''s host)", rank,
                    c.remoteAddress(), from, members.get(from));
            c.close();
            return;
        }
        register(from, c);
    }

    /** A fresh inbox for one member, within the config's budget. */
    private PeerInbox newInbox() {
        return new PeerInbox(config.inboxMessages(), config.inboxBytes());
    }

    /** The one way a connection becomes member {@code r}'s: a second one for the same rank, or one for a closed group, is closed. */
    private void register(int r, Connection c) {
        if (config.rejoins()) {
            awayIfDown(r);   // the member is back before its old connection's end was told
        }
        boolean rejoin;
        synchronized (joined) {
            if (closed || peers.get(r) != null) {
                if (!closed) {
                    // A live member keeps its rank: a second claim does not displace it.
                    LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: refused a second connection as rank {1} from {2}:"
                            + " rank {1} is connected (from {3})", rank, r, c.remoteAddress(), peers.get(r).remoteAddress());
                }
                c.close();
                return;
            }
            rejoin = lostOnce[r];
            if (rejoin) {
                inbox.set(r, newInbox());   // the lost one failed every wait; the member starts afresh
            }
            peers.set(r, c);
        }
        c.onReceive((conn, m) -> arrived(r, conn, m));
        c.onDisconnect(conn -> lost(r, conn));
        // First on every connection: how many collectives this member started (read before the
        // mesh is whole again, which may start the next one).
        control(r, imm(SYNC, 0), java.nio.ByteBuffer.allocate(Long.BYTES).putLong(started).array());
        if (rejoin) {
            inbox.get(r).expect(imm(SYNC, 0));   // its count is for itself: ours goes on
            LOG.log(System.Logger.Level.INFO, "PeerGroup rank {0}: rank {1} ({2}) joined again", rank, r, members.get(r));
            completeIfWhole();
        }
        joined.get(r).complete(c);   // outside the lock: it runs what waits for the mesh
        if (c.state() != ConnectionState.ESTABLISHED) {
            lost(r, c);   // it went down before onDisconnect was set: nobody else would say so
        }
    }

    /** On the IO thread: a control message or a data arrival from member {@code r}, checked before anything is kept. */
    private void arrived(int r, Connection c, Message m) {
        var imm = m.imm();
        if (imm.isEmpty()) {
            if (!toldNoImm) {
                toldNoImm = true;
                LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: dropped a message without immediate value from rank {1}"
                        + " (and will drop more without saying so)", rank, r);
            }
            return;
        }
        int kind = GroupWireDescriptor.kind(imm.getAsInt());
        String bad = GroupWireDescriptor.checkPayload(kind, m.byteCount());
        if (bad == null) {
            byte[] payload = kind == READY || kind == READY2 || kind == SYNC
                    ? m.data().asSlice(0, m.byteCount()).toArray(ValueLayout.JAVA_BYTE) : null;
            bad = inbox.get(r).deliver(imm.getAsInt(), payload);
        }
        if (bad != null) {
            refuse(r, c, bad);
        }
    }

    /**
     * Member {@code r}'s connection sent what no honest member sends, or more than the inbox
     * holds: its waits fail naming it and why, and the connection is closed (as a lost member's:
     * a rejoining group waits for it to join again).
     */
    private void refuse(int r, Connection c, String why) {
        boolean first = false;
        if (peers.get(r) == c) {
            CollectiveException e = new CollectiveException(r, "rank " + r + " (" + members.get(r) + ") sent " + why
                    + "; its connection is closed");
            first = inbox.get(r).lose(e);   // once: what else it sent in the same burst is not logged again
            if (first) {
                LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: {1}", rank, e.getMessage());
            }
        }
        c.closeAsync();
        if (first) {
            lost(r, c);   // away now (a rejoining group), not when, or if, the close is told
        }
    }

    private void lost(int r, Connection c) {
        RdmaException why = c.failure();
        CollectiveException gone = new CollectiveException(r, "rank " + r + " (" + members.get(r) + ") is gone: its connection is "
                + c.state() + (why != null ? " (" + why.getMessage() + ")" : ""), why);
        if (!config.rejoins() || closed) {
            inbox.get(r).lose(gone);
            return;
        }
        int loss;
        synchronized (joined) {
            if (closed || peers.get(r) != c) {
                return;   // an old connection of a member that is away already, or back on a new one
            }
            // Away before the waits fail: a collective called on their failure waits for the member.
            peers.set(r, null);
            lostOnce[r] = true;
            loss = ++losses[r];
            if (whole.isDone()) {
                whole = new CompletableFuture<>();
            }
        }
        inbox.get(r).lose(gone);
        long deadline = System.nanoTime() + config.rejoinTimeout().toNanos();
        LOG.log(System.Logger.Level.WARNING, "PeerGroup rank {0}: lost rank {1} ({2}); waiting up to {3} ms for it to join again",
                rank, r, members.get(r), config.rejoinTimeout().toMillis());
        if (r < rank) {
            connect(r, deadline, 0);   // the lower rank listens again once it is back
        }
        CompletableFuture.delayedExecutor(config.rejoinTimeout().toNanos(), TimeUnit.NANOSECONDS).execute(() -> {
            CollectiveException never;
            synchronized (joined) {
                if (closed || peers.get(r) != null || broken != null || losses[r] != loss) {
                    return;
                }
                never = new CollectiveException(r, "rank " + r + " (" + members.get(r) + ") did not join again within "
                        + config.rejoinTimeout().toMillis() + " ms", why);
                broken = never;
            }
            whole.completeExceptionally(never);
        });
    }

    /**
     * A rejoining group: member {@code r}'s connection, if it is not established any more, is
     * closed and the member counted away now, not when its disconnect is told (a connection in
     * ERROR is not released until it is closed, and one whose peer vanished hears no disconnect).
     */
    private void awayIfDown(int r) {
        Connection old = peers.get(r);
        if (old != null && old.state() != ConnectionState.ESTABLISHED) {
            old.closeAsync();
            lost(r, old);
        }
    }

    /** A rejoining group: once no member is missing, the collectives that wait for the mesh go on. */
    private void completeIfWhole() {
        CompletableFuture<Void> w;
        synchronized (joined) {
            for (int i = 0; i < size; i++) {
                if (i != rank && peers.get(i) == null) {
                    return;
                }
            }
            w = whole;
        }
        w.complete(null);
    }

    /** Member {@code p}'s connection, for a step of a collective; a member away (lost, not back yet) fails it, naming it. */
    private Connection peer(int p) {
        Connection c = peers.get(p);
        if (c == null) {
            throw new CollectiveException(p, "rank " + p + " (" + members.get(p) + ") is away: its connection was lost", null);
        }
        return c;
    }

    /** The lowest rank missing from the mesh now, or -1. */
    private int firstMissing() {
        for (int i = 0; i < size; i++) {
            if (i != rank && peers.get(i) == null) {
                return i;
            }
        }
        return -1;
    }

    // ---------------------------------------------------------------- who

    /** {@return this member's rank} */
    public int rank() {
        return rank;
    }

    /** {@return how many members the group has} */
    public int size() {
        return size;
    }

    /**
     * The connection to member {@code r} (rdma_lib's peer index), for operations of one's own; null while a lost member is away.
     *
     * @param r the rank of another member
     * @return this connection
     */
    public Connection connection(int r) {
        checkRank("connection", r);
        if (r == rank) {
            throw new IllegalArgumentException("connection: rank " + r + " is this member");
        }
        return peers.get(r);
    }

    /**
     * {@return the ranks the collective running on this member now still waits for (a message to arrive, a
     * write to complete), lowest first; empty when none runs} The member a stalled collective names here
     * is the one holding it up; its time-out names the lowest.
     */
    public java.util.SortedSet<Integer> waitingFor() {
        CollectiveRun r = running;
        return r == null ? java.util.Collections.emptySortedSet() : r.waitingFor();
    }

    /**
     * {@return the {@code Rdma} this member's connections run on (allocate the collectives' regions from
     * it)}
     */
    public Rdma rdma() {
        return rdma;
    }

    /** {@return the member list the group was formed from} */
    public List<InetSocketAddress> members() {
        return members;
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
        return run("broadcast", run -> {
            if (rank == root) {
                return all(others().stream().map(p -> writeTo(run, p, region, 0, READY, DATA)).toList());
            }
            return receiveFrom(run, root, region, READY, DATA);
        });
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
        checkBlocks("allToAll", "send", send, blockSize, size);
        checkBlocks("allToAll", "recv", recv, blockSize, size);
        checkApart("allToAll", send, recv);
        if (algorithm == AllToAllAlgorithm.SEQUENTIAL) {
            return run("allToAll(SEQUENTIAL)", run -> sequentialAllToAll(run, send, recv, blockSize));
        }
        return run("allToAll(PAIRWISE)", run -> {
            copy(send, rank * (long) blockSize, recv, rank * (long) blockSize, blockSize);
            return exchangeWithAll(run, recv, p -> send.slice(p * (long) blockSize, blockSize), rank * (long) blockSize);
        });
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
        checkBlocks("allGather", "recv", recv, blockSize, size);
        checkApart("allGather", send, recv);
        return run("allGather", run -> {
            copy(send, 0, recv, rank * (long) blockSize, blockSize);
            return exchangeWithAll(run, recv, p -> send.slice(0, blockSize), rank * (long) blockSize);
        });
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
        if (rank == root) {
            checkBlocks("gather", "recv", recv, blockSize, size);
        }
        return run("gather", run -> {
            if (rank == root) {
                copy(send, 0, recv, rank * (long) blockSize, blockSize);
                return all(others().stream().map(p -> receiveFrom(run, p, recv, READY, DATA)).toList());
            }
            return writeTo(run, root, send.slice(0, blockSize), rank * (long) blockSize, READY, DATA);
        });
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
        if (rank == root) {
            checkBlocks("scatter", "send", send, blockSize, size);
        }
        return run("scatter", run -> {
            if (rank == root) {
                copy(send, rank * (long) blockSize, recv, 0, blockSize);
                return all(others().stream()
                        .map(p -> writeTo(run, p, send.slice(p * (long) blockSize, blockSize), 0, READY, DATA)).toList());
            }
            return receiveFrom(run, root, recv, READY, DATA);
        });
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
        return run("barrier", run -> {
            List<CompletableFuture<?>> steps = new ArrayList<>();
            for (int p : others()) {
                steps.add(run.track(p, inbox.get(p).expect(imm(BARRIER, run.seq))));
                steps.add(run.track(p, control(p, imm(BARRIER, run.seq), null)));
            }
            return all(steps);
        });
    }

    /**
     * {@link #barrier}, waiting in the caller (a failure is thrown: a {@link CollectiveException}
     * naming the rank).
     */
    public void barrierSync() {
        await(barrier());
    }

    /**
     * rdma_lib's all-to-all, through rank 0: every member writes its whole send region into a
     * staging region at rank 0 (row {@code rank}); rank 0 then writes to each member in turn the
     * column meant for it, waiting for each member before the next.
     */
    private CompletableFuture<Void> sequentialAllToAll(CollectiveRun run, LocalRegion send, LocalRegion recv, int blockSize) {
        long row = size * (long) blockSize;
        if (rank != 0) {
            // Our row to rank 0, then wait for our column from it.
            CompletableFuture<Void> out = writeTo(run, 0, send.slice(0, row), rank * row, READY, DATA);
            CompletableFuture<Void> in = receiveFrom(run, 0, recv, READY2, DATA2);
            return all(List.of(out, in));
        }
        LocalRegion staging = rdma.allocateUninitialized(size * row), column = rdma.allocateUninitialized(row);
        CompletableFuture<Void> rows = all(others().stream().map(p -> receiveFrom(run, p, staging, READY, DATA)).toList());
        CompletableFuture<Void> served = rows.thenCompose(v -> {
            // Row 0 is ours: it stays in send; our own column comes from the staging rows.
            copy(send, 0, recv, 0, blockSize);
            for (int i = 1; i < size; i++) {
                copy(staging, i * row, recv, i * (long) blockSize, blockSize);
            }
            CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
            for (int p = 1; p < size; p++) {
                int target = p;
                chain = chain.thenCompose(x -> serveColumn(run, target, send, staging, column, row, blockSize));
            }
            return chain;
        });
        // Closed when the collective ends, also by failure or time-out (a member that never came).
        run.result.whenComplete((v, e) -> {
            staging.close();
            column.close();
        });
        return served;
    }

    /**
     * Rank 0 of the sequential all-to-all: member {@code p}'s column, gathered into
     * {@code column} and written with one WRITE_WITH_IMM (one work request per member, whatever
     * the group's size: n writes per member would not fit a send queue past its depth).
     */
    private CompletableFuture<Void> serveColumn(CollectiveRun run, int p, LocalRegion send, LocalRegion staging, LocalRegion column,
                                                long row, int blockSize) {
        return run.track(p, inbox.get(p).expect(imm(READY2, run.seq))).thenCompose(d -> {
            RemoteRegion target = remote(run, p, d, 0, size * (long) blockSize);
            copy(send, p * (long) blockSize, column, 0, blockSize);
            for (int i = 1; i < size; i++) {
                copy(staging, i * row + p * (long) blockSize, column, i * (long) blockSize, blockSize);
            }
            return run.track(p, peer(p).writeWithImm(column, target.slice(0, column.length()), imm(DATA2, run.seq)));
        });
    }

    // ---------------------------------------------------------------- steps

    /** Tells member {@code p} where to write ({@code recv}), and waits for its arrival signal. */
    private CompletableFuture<Void> receiveFrom(CollectiveRun run, int p, LocalRegion recv, int ready, int data) {
        byte[] d = recv.toRemote(Access.REMOTE_WRITE).toDescriptor();
        CompletableFuture<Void> told = run.track(p, control(p, imm(ready, run.seq), d));
        CompletableFuture<byte[]> came = run.track(p, inbox.get(p).expect(imm(data, run.seq)));
        return told.thenCombine(came, (a, b) -> null);
    }

    /** Waits for member {@code p}'s region, then writes {@code src} at {@code offset} of it with the arrival signal. */
    private CompletableFuture<Void> writeTo(CollectiveRun run, int p, LocalRegion src, long offset, int ready, int data) {
        return run.track(p, inbox.get(p).expect(imm(ready, run.seq))).thenCompose(d -> {
            RemoteRegion target = remote(run, p, d, offset, src.length());
            return run.track(p, peer(p).writeWithImm(src, target.slice(offset, src.length()), imm(data, run.seq)));
        });
    }

    /** Member {@code p}'s region from its READY, checked to hold {@code length} bytes at {@code offset}. */
    private RemoteRegion remote(CollectiveRun run, int p, byte[] descriptor, long offset, long length) {
        RemoteRegion r;
        try {
            r = RemoteRegion.fromDescriptor(descriptor);
        } catch (IllegalArgumentException e) {
            throw new CollectiveException(p, run.what() + ": rank " + p + " sent a malformed region descriptor: " + e.getMessage(), e);
        }
        if (offset + length > r.length()) {
            throw new CollectiveException(p, run.what() + ": rank " + p + "'s receive region is " + r.length() + " bytes, "
                    + "this member writes " + length + " bytes at offset " + offset + ": do all members pass the same sizes?", null);
        }
        return r;
    }

    /** A control message to member {@code p}: the immediate value says what, the payload (may be null) carries a descriptor. */
    private CompletableFuture<Void> control(int p, int immediate, byte[] payload) {
        int n = payload == null ? 1 : payload.length;
        LocalRegion buf = rdma.allocate(n);
        if (payload != null) {
            MemorySegment.copy(payload, 0, buf.segment(), ValueLayout.JAVA_BYTE, 0, n);
        }
        CompletableFuture<Void> sent;
        try {
            sent = peer(p).sendWithImm(immediate, buf);
        } catch (RuntimeException e) {
            buf.close();
            return CompletableFuture.failedFuture(e);
        }
        return sent.whenComplete((v, e) -> buf.close());
    }

    /**
     * Every other member writes into {@code recv} (told with READY), and this member writes
     * {@code blockFor.apply(p)} at {@code offset} of each member p's region.
     */
    private CompletableFuture<Void> exchangeWithAll(CollectiveRun run, LocalRegion recv,
                                                    java.util.function.IntFunction<LocalRegion> blockFor, long offset) {
        List<CompletableFuture<?>> steps = new ArrayList<>();
        for (int p : others()) {
            steps.add(receiveFrom(run, p, recv, READY, DATA));
            steps.add(writeTo(run, p, blockFor.apply(p), offset, READY, DATA));
        }
        return all(steps);
    }

    private static CompletableFuture<Void> all(List<? extends CompletableFuture<?>> steps) {
        return CompletableFuture.allOf(steps.toArray(CompletableFuture[]::new));
    }

    /** The other members in the order rank + 1, rank + 2, ... (mod n), so that not all start on the same target. */
    private List<Integer> others() {
        List<Integer> l = new ArrayList<>(size - 1);
        for (int k = 1; k < size; k++) {
            l.add((rank + k) % size);
        }
        return l;
    }

    private static void copy(LocalRegion from, long fromOffset, LocalRegion to, long toOffset, long n) {
        MemorySegment.copy(from.segment(), fromOffset, to.segment(), toOffset, n);
    }

    /** Runs a collective after the ones called before it; a broken or closed group fails it at once. */
    private CompletableFuture<Void> run(String name, java.util.function.Function<CollectiveRun, CompletableFuture<Void>> body) {
        synchronized (lock) {
            if (closed) {
                return CompletableFuture.failedFuture(new CollectiveException(-1, name + ": the group of rank " + rank
                        + " is closed", null));
            }
            long number = ++collectives;
            CompletableFuture<Void> result = tail.handle((v, e) -> null).thenCompose(x -> start(name, number, body));
            tail = result;
            return result;
        }
    }

    private CompletableFuture<Void> start(String name, long number, java.util.function.Function<CollectiveRun, CompletableFuture<Void>> body) {
        if (config.rejoins() && !closed) {
            for (int i = 0; i < size; i++) {
                if (i != rank) {
                    awayIfDown(i);
                }
            }
        }
        CompletableFuture<Void> w = whole;
        if (!w.isDone() && broken == null && !closed) {
            // A member is away (rejoining group): wait for it, within the collective's time.
            return w.orTimeout(config.collectiveTimeout().toNanos(), TimeUnit.NANOSECONDS).handle((v, e) -> e)
                    .thenCompose(e -> {
                        if (e == null || broken != null || closed) {
                            return start(name, number, body);
                        }
                        started = number;
                        int missing = firstMissing();
                        return CompletableFuture.failedFuture(new CollectiveException(missing, name + " #" + number
                                + ": rank " + missing + (missing < 0 ? "" : " (" + members.get(missing) + ")")
                                + " has not joined again within the collective time-out of "
                                + config.collectiveTimeout().toMillis() + " ms", null));
                    });
        }
        started = number;
        CollectiveException b = broken;
        if (b != null || closed) {
            return CompletableFuture.failedFuture(new CollectiveException(b == null ? -1 : b.rank(), name + " #" + number
                    + ": the group is " + (closed ? "closed" : "broken since " + b.getMessage() + "; close it"), b));
        }
        CollectiveRun run = new CollectiveRun(name, number, config.collectiveTimeout());
        for (int i = 0; i < size; i++) {
            inbox.get(i).forgetBefore(run.seq);   // what earlier collectives left is never asked for: out of the budget
        }
        running = run;
        try {
            run.finishWith(body.apply(run));
        } catch (RuntimeException e) {
            run.fail(e instanceof CollectiveException ce ? ce.rank() : -1, e);
        }
        return run.result.whenComplete((v, e) -> {
            if (e != null && broken == null && !config.rejoins()) {
                broken = e instanceof CollectiveException ce ? ce : new CollectiveException(-1, e.getMessage(), e);
            }
            if (e != null && config.rejoins()) {
                // The member the failure names, if its connection is down: away now, so that it
                // may join again before the next collective looks.
                Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                int r = c instanceof CollectiveException ce ? ce.rank() : -1;
                if (r >= 0 && r < size && r != rank) {
                    awayIfDown(r);
                }
            }
        });
    }

    private void checkRank(String what, int r) {
        if (r < 0 || r >= size) {
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
        synchronized (lock) {
            if (closed) {
                return;
            }
            synchronized (joined) {
                closed = true;   // register() checks it under the same lock: no connection joins a closed group
            }
        }
        CollectiveException why = new CollectiveException(-1, "the group of rank " + rank + " was closed", null);
        for (int i = 0; i < size; i++) {
            inbox.get(i).lose(why);
        }
        whole.completeExceptionally(why);
        synchronized (connecting) {
            for (CompletableFuture<Connection> f : connecting) {
                f.thenAccept(Connection::close);
            }
        }
        // All at once, then one wait: a group's close is bounded by one connection's teardown,
        // not by the sum of them, and it never throws because a peer was slow.
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            Connection c = peers.get(i);
            if (c != null) {
                closing.add(c.closeAsync());
            }
        }
        if (server != null) {
            server.close();
        }
        if (rdma.isIoThread()) {
            return;   // a callback: waiting here would block the thread that finishes the teardowns
        }
        try {
            CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            long left = closing.stream().filter(f -> !f.isDone()).count();
            System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING, "closing " + this + ": " + left
                    + " connection(s) not finished after " + CLOSE_WAIT_SECONDS + " s; they go on in the background");
        }
    }

    /** How long {@link #close} waits for its connections' teardowns (each at most 5 s, all at once). */
    private static final long CLOSE_WAIT_SECONDS = 6;

    @Override
    public String toString() {
        return "PeerGroup[rank " + rank + " of " + size + ", " + members.get(rank) + (closed ? ", closed" : "")
                + (broken != null ? ", broken" : "") + "]";
    }
}
