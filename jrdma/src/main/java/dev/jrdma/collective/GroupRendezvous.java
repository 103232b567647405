package dev.jrdma.collective;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Forming a group whose members do not know each other in advance (rdma_lib's server that
 * accepts its clients): rank 0 listens at a rendezvous address, each member connects there
 * with the address it will listen on, and gets its rank in the order it was accepted. Once
 * all have come, rank 0 sends each the member list (rank 0's entry is the rendezvous
 * address), the rendezvous connections close, and every member {@link PeerGroup#joinAsync
 * joins} the mesh with that list.
 *
 * <pre>
 * connect request private data:  magic "JRR1" (4) | port (2) | address length (1) | address (4 or 16)
 * list message (one send):       magic "JRL1" (4) | rank (4) | size (4) | size x (length (1) | address | port (2))
 * </pre>
 *
 * <p>With a {@linkplain GroupConfig#secret() secret}, a member presents {@link GroupProof#rendezvousJoin}
 * as its auth token (rank 0's listener refuses any other before a connection exists, so no rank
 * goes to a process without the secret) and takes a list only from a rendezvous whose accept
 * private data is {@link GroupProof#rendezvousHost}. Without one, ranks go to the first
 * {@code size - 1} processes that reach the rendezvous, each from the host it says it listens on.
 *
 * <p>The list is read as hostile input: the member count is checked against what the bytes
 * received can hold (an entry is at least {@value #MIN_ENTRY_BYTES} bytes) and against
 * {@link #MAX_MEMBERS} before anything is allocated for it.
 */
final class GroupRendezvous {
    static final int HELLO_MAGIC = 0x4A525231, LIST_MAGIC = 0x4A524C31;   // "JRR1", "JRL1"
    /** The rendezvous connection's receive buffer: a list of about 3 000 IPv6 members fits. */
    static final int LIST_BUFFER = 64 << 10;
    /** The shortest entry of a member list: an IPv4 address (length, 4 bytes, port). */
    static final int MIN_ENTRY_BYTES = 1 + 4 + 2;
    /** The most members a list can name: as many IPv4 entries as fill the rendezvous receive buffer. */
    static final int MAX_MEMBERS = (LIST_BUFFER - 12) / MIN_ENTRY_BYTES;

    private GroupRendezvous() {
    }

    /** Rank 0: accepts {@code size - 1} members at {@code rendezvous}, sends them the list, then joins. */
    static CompletableFuture<PeerGroup> host(Rdma rdma, InetSocketAddress rendezvous, int size, GroupConfig config) {
        if (size < 1) {
            throw new IllegalArgumentException("PeerGroup.host: a group has at least 1 member, not " + size);
        }
        if (size == 1) {
            return PeerGroup.joinAsync(rdma, List.of(rendezvous), 0, config);
        }
        List<Connection> came = new ArrayList<>();
        List<InetSocketAddress> members = new ArrayList<>(List.of(rendezvous));
        CompletableFuture<Void> all = new CompletableFuture<>();
        ConnectionConfig.Builder ccb = config.connection().toBuilder().receiveBufferSize(LIST_BUFFER);
        if (config.hasSecret()) {
            ccb.authToken(GroupProof.rendezvousJoin(config.secretRef(), rendezvous))
                    .privateData(GroupProof.rendezvousHost(config.secretRef(), rendezvous));
        }
        ConnectionConfig cc = ccb.build();
        RdmaServer server = rdma.listen(rendezvous, cc, c -> {
            synchronized (came) {
                InetSocketAddress a;
                try {
                    a = helloAddress(c.peerPrivateData());
                } catch (IllegalArgumentException e) {
                    byte[] d = c.peerPrivateData();
                    c.close();
                    if (d.length >= 4 && ByteBuffer.wrap(d).getInt() == GroupWireDescriptor.MAGIC) {
                        return;   // a member early for the mesh: it tries again once rank 0 listens for it
                    }
                    System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING,
                            "PeerGroup rendezvous at {0}: refused {1}: {2}", rendezvous, c.remoteAddress(), e.getMessage());
                    return;
                }
                if (came.size() == size - 1 || members.contains(a)) {
                    c.close();   // one too many, or a second member at the same address
                    return;
                }
                if (!config.hasSecret() && !MemberAddress.mayClaim(c.remoteAddress().getAddress(), a.getAddress())) {
                    // Without a secret, a member says where it listens only for its own host: the
                    // group would connect wherever it said.
                    System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING,
                            "PeerGroup rendezvous at {0}: refused {1}: it says it listens on {2}, another host",
                            rendezvous, c.remoteAddress(), a);
                    c.close();
                    return;
                }
                came.add(c);
                members.add(a);
                if (came.size() == size - 1) {
                    all.complete(null);
                }
            }
        });
        return all.orTimeout(config.joinTimeout().toNanos(), TimeUnit.NANOSECONDS).thenCompose(v -> {
            List<CompletableFuture<Void>> sent = new ArrayList<>();
            for (int r = 1; r < size; r++) {
                byte[] list = list(r, members);
                LocalRegion buf = rdma.allocate(list.length);
                buf.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(list));
                sent.add(came.get(r - 1).send(buf).whenComplete((x, e) -> buf.close()));
            }
            return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
        }).handle((v, e) -> {
            server.close();   // and the rendezvous connections: the mesh is made anew
            if (e != null) {
                int missing;
                synchronized (came) {
                    missing = size - 1 - came.size();
                }
                throw new CollectiveException(-1, "PeerGroup.host at " + rendezvous + ": " + (missing > 0
                        ? missing + " of " + (size - 1) + " members did not come within " + config.joinTimeout().toMillis() + " ms"
                        : "the member list was not sent: " + e.getMessage()), e);
            }
            return List.copyOf(members);
        }).thenCompose(list -> PeerGroup.joinAsync(rdma, list, 0, config));
    }

    /** A member: connects to the rendezvous with {@code listenOn}, waits for the list and its rank, then joins. */
    static CompletableFuture<PeerGroup> join(Rdma rdma, InetSocketAddress rendezvous, InetSocketAddress listenOn, GroupConfig config) {
        ConnectionConfig.Builder ccb = config.connection().toBuilder().privateData(hello(listenOn)).receiveBufferSize(LIST_BUFFER);
        byte[] hostProof = null;
        if (config.hasSecret()) {
            ccb.authToken(GroupProof.rendezvousJoin(config.secretRef(), rendezvous));
            hostProof = GroupProof.rendezvousHost(config.secretRef(), rendezvous);
        }
        ConnectionConfig cc = ccb.build();
        long deadline = System.nanoTime() + config.joinTimeout().toNanos();
        return connect(rdma, rendezvous, cc, hostProof, deadline, 0).thenCompose(c -> c.receive()
                .orTimeout(config.joinTimeout().toNanos(), TimeUnit.NANOSECONDS)
                .whenComplete((m, e) -> {
                    if (e != null) {
                        c.close();   // given up: rank 0 must not count on this member any more
                    }
                })
                .thenCompose(m -> {
                    int[] rank = new int[1];
                    List<InetSocketAddress> members;
                    try (Message msg = m) {
                        members = parseList(msg.data().asSlice(0, msg.byteCount()).toArray(ValueLayout.JAVA_BYTE), rank);
                    } catch (RuntimeException e) {
                        c.close();
                        throw e;
                    }
                    if (!members.get(rank[0]).equals(listenOn)) {
                        c.close();
                        throw new CollectiveException(0, "PeerGroup rendezvous: rank 0 gave this member rank " + rank[0]
                                + ", listed at " + members.get(rank[0]) + ", but it listens on " + listenOn);
                    }
                    return rendezvousEnded(c, deadline).thenCompose(v -> PeerGroup.joinAsync(rdma, members, rank[0], config));
                }));
    }

    /** The longest a member waits for rank 0 to end the rendezvous before it joins the mesh anyway. */
    static final long RENDEZVOUS_END_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    /**
     * Completes once rank 0 has ended the rendezvous (it closes its listener, then the rendezvous
     * connections, once every member has its list), or after {@link #RENDEZVOUS_END_WAIT_NANOS}
     * (or the join deadline, if sooner), and closes the member's side. Rank 0's mesh listens on the
     * rendezvous address: a mesh connect made while the rendezvous still listens there shows a mesh
     * proof where the rendezvous expects its own, and rank 0 counts it as a wrong token of this
     * host (on one host: of every member), which past four makes them all wait.
     */
    private static CompletableFuture<Void> rendezvousEnded(Connection c, long deadline) {
        CompletableFuture<Void> ended = new CompletableFuture<>();
        c.onDisconnect(x -> ended.complete(null));
        if (c.state() != ConnectionState.ESTABLISHED) {
            ended.complete(null);   // it went down before the callback was there
        }
        long wait = Math.max(0, Math.min(RENDEZVOUS_END_WAIT_NANOS, deadline - System.nanoTime()));
        return ended.completeOnTimeout(null, wait, TimeUnit.NANOSECONDS).whenComplete((v, e) -> c.close());
    }

    /** Connects to a rendezvous that refused, so far, in this process: how tests see a member waiting for rank 0. */
    static final java.util.concurrent.atomic.AtomicLong REFUSED_ATTEMPTS = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Connects, again every so often while nobody listens there yet (rank 0 may start last), or
     * while what listens there does not show {@code hostProof} (null: no secret, not asked).
     */
    private static CompletableFuture<Connection> connect(Rdma rdma, InetSocketAddress to, ConnectionConfig cc, byte[] hostProof,
                                                         long deadline, int attempt) {
        return rdma.connectAsync(to, cc).handle((c, e) -> {
            if (e == null && (hostProof == null || GroupProof.holds(c.peerPrivateData(), 0, hostProof))) {
                return CompletableFuture.completedFuture(c);
            }
            if (e == null) {
                c.close();
                e = new CollectiveException(0, "the listener at " + to + " does not prove the group secret");
            }
            REFUSED_ATTEMPTS.incrementAndGet();
            long wait = Math.min(500, 20L << Math.min(attempt, 5));
            if (System.nanoTime() + wait * 1_000_000 >= deadline) {
                return CompletableFuture.<Connection>failedFuture(new CollectiveException(0, "PeerGroup: no rendezvous at " + to
                        + " (rank 0) before the join time-out: " + e.getMessage(), e));
            }
            return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(wait, TimeUnit.MILLISECONDS))
                    .thenCompose(x -> connect(rdma, to, cc, hostProof, deadline, attempt + 1));
        }).thenCompose(f -> f);
    }

    static byte[] hello(InetSocketAddress a) {
        byte[] ip = a.getAddress().getAddress();
        return ByteBuffer.allocate(7 + ip.length).putInt(HELLO_MAGIC).putShort((short) a.getPort()).put((byte) ip.length)
                .put(ip).array();
    }

    static InetSocketAddress helloAddress(byte[] d) {
        if (d == null || d.length < 11) {
            throw new IllegalArgumentException("no rendezvous hello (" + (d == null ? 0 : d.length) + " bytes of private data)");
        }
        ByteBuffer b = ByteBuffer.wrap(d);
        if (b.getInt() != HELLO_MAGIC) {
            throw new IllegalArgumentException("not a PeerGroup rendezvous hello");
        }
        int port = Short.toUnsignedInt(b.getShort());
        return new InetSocketAddress(address(b), port);
    }

    static byte[] list(int rank, List<InetSocketAddress> members) {
        ByteBuffer b = ByteBuffer.allocate(12 + members.size() * 19).putInt(LIST_MAGIC).putInt(rank).putInt(members.size());
        for (InetSocketAddress a : members) {
            byte[] ip = a.getAddress().getAddress();
            b.put((byte) ip.length).put(ip).putShort((short) a.getPort());
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    static List<InetSocketAddress> parseList(byte[] d, int[] rank) {
        ByteBuffer b = ByteBuffer.wrap(d);
        if (d.length < 12 || b.getInt() != LIST_MAGIC) {
            throw new CollectiveException(0, "PeerGroup rendezvous: rank 0 sent no member list (" + d.length + " bytes)");
        }
        rank[0] = b.getInt();
        int n = b.getInt();
        // Checked before anything is allocated for n: the bytes received must be able to hold it.
        int room = b.remaining() / MIN_ENTRY_BYTES;
        if (n < 2 || n > MAX_MEMBERS || n > room) {
            throw new CollectiveException(0, "PeerGroup rendezvous: rank 0's member list claims size " + n + "; its "
                    + d.length + " bytes hold at most " + room
                    + " members, and a list names 2 to " + MAX_MEMBERS);
        }
        if (rank[0] < 1 || rank[0] >= n) {
            throw new CollectiveException(0, "PeerGroup rendezvous: rank 0's member list gives this member rank " + rank[0]
                    + ", not one of 1.." + (n - 1));
        }
        List<InetSocketAddress> members = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            try {
                InetAddress ip = address(b);
                if (b.remaining() < 2) {
                    throw new IllegalArgumentException("no port after the address");
                }
                members.add(new InetSocketAddress(ip, Short.toUnsignedInt(b.getShort())));
            } catch (IllegalArgumentException e) {
                throw new CollectiveException(0, "PeerGroup rendezvous: entry " + i + " of rank 0's member list of " + n
                        + " (at byte " + b.position() + " of " + d.length + "): " + e.getMessage(), e);
            }
        }
        return members;
    }

    private static InetAddress address(ByteBuffer b) {
        if (!b.hasRemaining()) {
            throw new IllegalArgumentException("no address length byte");
        }
        int len = Byte.toUnsignedInt(b.get());
        if (len != 4 && len != 16 || b.remaining() < len) {
            throw new IllegalArgumentException("an address of " + len + " bytes (" + b.remaining() + " left)");
        }
        byte[] ip = new byte[len];
        b.get(ip);
        try {
            return InetAddress.getByAddress(ip);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }
}
