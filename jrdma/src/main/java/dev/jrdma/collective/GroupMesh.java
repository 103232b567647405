package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.READY2;
import static dev.jrdma.collective.GroupWireDescriptor.SYNC;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A member's full mesh: it listens for the higher ranks, connects to the lower ones (again while
 * they do not listen yet), gives each connection its rank once it passed the checks of
 * {@link PeerGroup}'s "who may take a rank", keeps each member's {@link PeerInbox}, and, in a
 * rejoining group, counts a lost member away and takes it back when it joins again.
 *
 * <p>Threads: connection callbacks (the IO threads) and the callers of {@link PeerGroup}; what
 * they share is guarded by {@code joined} (ranks' connections, losses, {@link #closed}) or is
 * atomic or volatile.
 */
final class GroupMesh {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /** How long {@link #closeAll} waits for its connections' teardowns (each at most 5 s, all at once). */
    private static final long CLOSE_WAIT_SECONDS = 6;

    final Rdma rdma;
    final List<InetSocketAddress> members;
    final int rank, size, groupId;
    final GroupConfig config;
    private final AtomicReferenceArray<Connection> peers;
    private final AtomicReferenceArray<PeerInbox> inbox;
    private final List<CompletableFuture<Connection>> joined = new ArrayList<>();
    private final List<CompletableFuture<Connection>> connecting = new ArrayList<>();
    /** Per lower rank, why the last connect to it did not make the connection (for the join's failure). */
    private final AtomicReferenceArray<String> lastAnswer;
    private RdmaServer server;
    /** The connections' config with the group's hello, for the connects of forming and of rejoins (see {@link #connectConfig}). */
    private ConnectionConfig mine;
    /** Whether a message without immediate value was logged already (one line, not one per message of a flood). */
    private volatile boolean toldNoImm;
    /** Ranks whose connection was lost once: their next registration is a rejoin. */
    private final boolean[] lostOnce;
    /** Per rank, how often it was lost: a rejoin deadline is about one loss, not a later one. */
    private final int[] losses;
    /** Complete while every member is connected; a new one is made when one is lost (rejoining groups). */
    volatile CompletableFuture<Void> whole = CompletableFuture.completedFuture(null);
    /** The failure that broke the group (set by a rejoin that never came, or by a collective's failure). */
    volatile CollectiveException broken;
    volatile boolean closed;
    /** The number of the last collective this member started (or failed at once); what SYNC tells a member. */
    volatile long started;

    GroupMesh(Rdma rdma, List<InetSocketAddress> members, int rank, GroupConfig config) {
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
        this.lastAnswer = new AtomicReferenceArray<>(size);
        for (int i = 0; i < size; i++) {
            inbox.set(i, newInbox());
            joined.add(new CompletableFuture<>());
        }
        joined.get(rank).complete(null);
    }

    /**
     * Listens (unless this is the highest rank) and starts the connects to the lower ranks; the
     * future completes once every member is connected.
     *
     * @throws CollectiveException when this member cannot listen on its address
     */
    CompletableFuture<Void> form(long deadline) {
        mine = config.connection().toBuilder()
                .privateData(GroupWireDescriptor.hello(groupId, rank, size)).build();
        try {
            if (rank < size - 1) {
                server = rdma.listen(members.get(rank), listenConfig(), this::accepted);
            }
        } catch (RuntimeException e) {
            throw new CollectiveException(rank, "PeerGroup: rank " + rank + " cannot listen on "
                    + members.get(rank) + ": " + e.getMessage(), e);
        }
        for (int j = 0; j < rank; j++) {
            connect(j, deadline, 0);
        }
        return CompletableFuture.allOf(joined.toArray(CompletableFuture[]::new));
    }

    /** Member {@code p}'s inbox: what it sent before this member asked for it. */
    PeerInbox inbox(int p) {
        return inbox.get(p);
    }

    /** Member {@code p}'s connection now; null while it is away (or before the mesh formed). */
    Connection connection(int p) {
        return peers.get(p);
    }

    /** Under the mesh's lock: no connection joins a group closed here. Returns false when it was closed already. */
    boolean markClosed() {
        synchronized (joined) {
            if (closed) {
                return false;
            }
            closed = true;   // register() checks it under the same lock
            return true;
        }
    }

    CollectiveException joinFailure(Throwable e) {
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

    void lost(int r, Connection c) {
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
    void awayIfDown(int r) {
        Connection old = peers.get(r);
        if (old != null && old.state() != ConnectionState.ESTABLISHED) {
            old.closeAsync();
            lost(r, old);
        }
    }

    /** A rejoining group: once no member is missing, the collectives that wait for the mesh go on. */
    void completeIfWhole() {
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
    Connection peer(int p) {
        Connection c = peers.get(p);
        if (c == null) {
            throw new CollectiveException(p, "rank " + p + " (" + members.get(p) + ") is away: its connection was lost", null);
        }
        return c;
    }

    /** The lowest rank missing from the mesh now, or -1. */
    int firstMissing() {
        for (int i = 0; i < size; i++) {
            if (i != rank && peers.get(i) == null) {
                return i;
            }
        }
        return -1;
    }

    /** A control message to member {@code p}: the immediate value says what, the payload (may be null) carries a descriptor. */
    CompletableFuture<Void> control(int p, int immediate, byte[] payload) {
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

    /** The other members in the order rank + 1, rank + 2, ... (mod n), so that not all start on the same target. */
    List<Integer> others() {
        List<Integer> l = new ArrayList<>(size - 1);
        for (int k = 1; k < size; k++) {
            l.add((rank + k) % size);
        }
        return l;
    }

    /** After {@link #markClosed}: fails every wait, closes every connection and the listener, waits a bounded time. */
    void closeAll(String name) {
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
            LOG.log(System.Logger.Level.WARNING, "closing " + name + ": " + left
                    + " connection(s) not finished after " + CLOSE_WAIT_SECONDS + " s; they go on in the background");
        }
    }
}
