package dev.jrdma.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A rendezvous host that lies about the member list (issue 45: 19 bytes claiming 400 million
 * members made a member allocate 1.6 GiB before reading them), and one that squats on the
 * rendezvous address of a group with a secret, on tcp and shm; and the checks of the list and
 * of a member's address, as units.
 */
class GroupRendezvousHostileTest {
    private static final long T = 30;
    private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();
    private static final GroupConfig WITH_SECRET = GroupConfig.defaults().withJoinTimeout(Duration.ofSeconds(T))
            .withSecret("a rendezvous secret of 32 bytes.".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    /** A free loopback port, never one given before in this JVM. */
    static InetSocketAddress freeAddress() {
        while (true) {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                if (GIVEN.add(s.getLocalPort())) {
                    return new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private Rdma rdma(String provider) {
        Rdma r = Rdma.builder().provider(provider).build();
        open.add(r);
        return r;
    }

    /**
     * What every thread of this JVM has allocated so far: HotSpot's count, through its interface
     * in jdk.management (by reflection: the test module does not read that module).
     */
    static long allocatedBytes() {
        try {
            return (long) Class.forName("com.sun.management.ThreadMXBean").getMethod("getTotalThreadAllocatedBytes")
                    .invoke(ManagementFactory.getThreadMXBean());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no allocation count in this JVM", e);
        }
    }

    /** A list message: magic, rank, the claimed size, then the entry bytes as given. */
    static byte[] list(int rank, int claimedSize, byte[] entries) {
        return ByteBuffer.allocate(12 + entries.length).putInt(GroupRendezvous.LIST_MAGIC).putInt(rank).putInt(claimedSize)
                .put(entries).array();
    }

    /** A rendezvous that answers every member with {@code message}, counting the members it answered. */
    private RdmaServer lyingHost(Rdma hostile, InetSocketAddress at, ConnectionConfig config, byte[] message, AtomicInteger answered) {
        return hostile.listen(at, config.toBuilder().receiveBufferSize(GroupRendezvous.LIST_BUFFER).build(), c -> {
            LocalRegion buf = hostile.allocate(message.length);
            MemorySegment.copy(message, 0, buf.segment(), ValueLayout.JAVA_BYTE, 0, message.length);
            answered.incrementAndGet();
            c.send(buf).whenComplete((v, e) -> buf.close());
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aListOf19BytesClaiming400MillionMembersIsRefusedNamingItBeforeAnythingIsAllocated(String provider) throws Exception {
        Rdma hostile = rdma(provider), member = rdma(provider);
        InetSocketAddress rendezvous = freeAddress();
        byte[] lie = list(1, 400_000_000, new byte[] {4, 127, 0, 0, 1, 0x1F, (byte) 0x90});   // 19 bytes: one IPv4 entry
        assertEquals(19, lie.length);
        AtomicInteger answered = new AtomicInteger();
        open.add(lyingHost(hostile, rendezvous, ConnectionConfig.defaults(), lie, answered));
        long allocated0 = allocatedBytes(), t0 = System.nanoTime();
        CompletableFuture<PeerGroup> j = PeerGroup.joinViaAsync(member, rendezvous, freeAddress(), GroupConfig.defaults());
        ExecutionException e = assertThrows(ExecutionException.class, () -> j.get(T, TimeUnit.SECONDS));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), allocated = allocatedBytes() - allocated0;
        // Without the check: new ArrayList<>(400 000 000), 1.6 GiB, before the second entry was found missing.
        assertTrue(allocated < 64L << 20, "the member allocated " + (allocated >> 20) + " MiB reading a 19-byte list");
        assertTrue(e.getCause() instanceof CollectiveException, String.valueOf(e.getCause()));
        assertTrue(e.getCause().getMessage().contains("claims size 400000000; its 19 bytes hold at most 1"), e.getCause().getMessage());
        assertEquals(1, answered.get(), "the member asked once");
        assertTrue(millis < 10_000, "refused after " + millis + " ms");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void withASecretMembersTakeNoListFromASquatterAndFormTheGroupWithTheRealHost(String provider) throws Exception {
        Rdma hostile = rdma(provider), host = rdma(provider), others = rdma(provider);
        GroupConfig config = WITH_SECRET;
        InetSocketAddress rendezvous = freeAddress();
        // The squatter answers everyone with a list that would put both members at its own ports.
        byte[] entries = ByteBuffer.allocate(21).put(new byte[] {4, 127, 0, 0, 1}).putShort((short) 1)
                .put(new byte[] {4, 127, 0, 0, 1}).putShort((short) 2).put(new byte[] {4, 127, 0, 0, 1}).putShort((short) 3).array();
        AtomicInteger answered = new AtomicInteger();
        RdmaServer squat = lyingHost(hostile, rendezvous, ConnectionConfig.defaults(), list(1, 3, entries), answered);
        List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            joining.add(PeerGroup.joinViaAsync(others, rendezvous, freeAddress(), config));
        }
        PeerGroupHostileMemberTest.awaitTrue(() -> answered.get() >= 4, T * 1000, "the members tried the squatter twice each");
        squat.close();
        PeerGroup zero = PeerGroup.hostAsync(host, rendezvous, 3, config).get(T, TimeUnit.SECONDS);
        open.add(zero);
        List<PeerGroup> g = new ArrayList<>(List.of(zero));
        for (CompletableFuture<PeerGroup> f : joining) {
            PeerGroup m = f.get(T, TimeUnit.SECONDS);
            open.add(m);
            assertEquals(zero.members(), m.members(), "the real host's list, not the squatter's");
            g.add(m);
        }
        PeerGroupHostileMemberTest.barrierOnAll(g);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void withASecretAHostTakesNoMemberWithoutItAndTheRealMembersFormTheGroup(String provider) throws Exception {
        Rdma hostile = rdma(provider), host = rdma(provider), others = rdma(provider);
        GroupConfig config = WITH_SECRET;
        InetSocketAddress rendezvous = freeAddress();
        CompletableFuture<PeerGroup> zero = PeerGroup.hostAsync(host, rendezvous, 3, config);
        // Impostors come first, with hellos as a member sends them but no proof: none takes a rank.
        int refused = 0;
        for (int i = 0; i < 20; i++) {
            ConnectionConfig hello = ConnectionConfig.builder().privateData(GroupRendezvous.hello(freeAddress()))
                    .receiveBufferSize(GroupRendezvous.LIST_BUFFER).build();
            try {
                Connection c = hostile.connectAsync(rendezvous, hello).get(T, TimeUnit.SECONDS);
                c.close();
            } catch (ExecutionException e) {
                refused++;
            }
        }
        assertEquals(20, refused, "impostors refused at the rendezvous");
        assertFalse(zero.isDone(), "the host still waits for its two members");
        List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            joining.add(PeerGroup.joinViaAsync(others, rendezvous, freeAddress(), config));
        }
        PeerGroup z = zero.get(T, TimeUnit.SECONDS);
        open.add(z);
        List<PeerGroup> g = new ArrayList<>(List.of(z));
        for (CompletableFuture<PeerGroup> f : joining) {
            PeerGroup m = f.get(T, TimeUnit.SECONDS);
            open.add(m);
            g.add(m);
        }
        PeerGroupHostileMemberTest.barrierOnAll(g);
    }

    /**
     * Rank 0's mesh address is its rendezvous address. A member that took its list and connected
     * to rank 0's mesh while the rendezvous still listened there presented a mesh proof where the
     * rendezvous wants its own: the host counted its own members as wrong tokens of their host
     * and, past 4, made them all wait (up to 10 s). Members now wait for rank 0 to end the
     * rendezvous before they join the mesh.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aHostedGroupWithASecretOnOneHostDoesNotCountItsOwnMembersAsWrongTokens(String provider) throws Exception {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.jrdma");
        List<String> refusals = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                String m = r.getMessage();
                if (m != null && (m.contains("auth token") || m.contains("refused connection requests"))) {
                    refusals.add(m);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(capture);
        dev.jrdma.spi.Log.forgetLimits();   // the lines are rate-limited: this case's must show
        try {
            int size = 32;   // 8 and 16 rarely showed it; 32 did (one provider of two), and stays under maxConnectionsPerSource
            Rdma host = rdma(provider), others = rdma(provider);
            InetSocketAddress rendezvous = freeAddress();
            CompletableFuture<PeerGroup> zero = PeerGroup.hostAsync(host, rendezvous, size, WITH_SECRET);
            List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
            for (int i = 1; i < size; i++) {
                joining.add(PeerGroup.joinViaAsync(others, rendezvous, freeAddress(), WITH_SECRET));
            }
            List<PeerGroup> g = new ArrayList<>();
            PeerGroup z = zero.get(T, TimeUnit.SECONDS);
            open.add(z);
            g.add(z);
            for (CompletableFuture<PeerGroup> f : joining) {
                PeerGroup m = f.get(T, TimeUnit.SECONDS);
                open.add(m);
                g.add(m);
            }
            PeerGroupHostileMemberTest.barrierOnAll(g);
            assertEquals(List.of(), refusals, "the host refused its own members");
        } finally {
            jul.removeHandler(capture);
        }
    }

    @Test
    void everyCountInAMemberListIsCheckedAgainstTheBytesThatCarryIt() {
        int[] rank = new int[1];
        byte[] one = {4, 127, 0, 0, 1, 0x1F, (byte) 0x90};
        CollectiveException e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(1, -1, one), rank));
        assertTrue(e.getMessage().contains("claims size -1"), e.getMessage());
        e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(1, Integer.MAX_VALUE, new byte[0]), rank));
        assertTrue(e.getMessage().contains("its 12 bytes hold at most 0"), e.getMessage());
        // As many IPv4 entries as the size says, but the receive buffer could not carry them: the hard cap.
        int past = GroupRendezvous.MAX_MEMBERS + 1;
        byte[] many = new byte[past * GroupRendezvous.MIN_ENTRY_BYTES];
        e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(1, past, many), rank));
        assertTrue(e.getMessage().contains("a list names 2 to " + GroupRendezvous.MAX_MEMBERS), e.getMessage());
        // Two entries counted, but the second is an IPv6 address cut short, then one without its port.
        byte[] cut = ByteBuffer.allocate(7 + 10).put(one).put((byte) 16).put(new byte[9]).array();
        e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(1, 2, cut), rank));
        assertTrue(e.getMessage().contains("entry 1") && e.getMessage().contains("an address of 16 bytes (9 left)"), e.getMessage());
        byte[] v6 = new byte[19];
        v6[0] = 16;
        byte[] noPort = ByteBuffer.allocate(19 + 5).put(v6).put(new byte[] {4, 10, 0, 0, 2}).array();
        e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(1, 2, noPort), rank));
        assertTrue(e.getMessage().contains("entry 1") && e.getMessage().contains("no port"), e.getMessage());
        byte[] two = ByteBuffer.allocate(7 + 7).put(one).put(new byte[] {4, 10, 0, 0, 2, 0, 0}).array();
        e = assertThrows(CollectiveException.class, () -> GroupRendezvous.parseList(list(2, 2, two), rank));
        assertTrue(e.getMessage().contains("gives this member rank 2, not one of 1..1"), e.getMessage());
        List<InetSocketAddress> fine = GroupRendezvous.parseList(list(1, 2, two), rank);
        assertEquals(List.of(new InetSocketAddress("127.0.0.1", 8080), new InetSocketAddress("10.0.0.2", 0)), fine);
        assertEquals(1, rank[0]);
    }

    @Test
    void withoutASecretARankIsTakenOnlyFromItsMembersHost() throws Exception {
        InetAddress loop = InetAddress.getLoopbackAddress(), other = InetAddress.getByName("127.0.0.2");
        InetAddress far = InetAddress.getByName("192.0.2.10"), farther = InetAddress.getByName("192.0.2.11");   // TEST-NET-1
        assertTrue(MemberAddress.mayClaim(far, far), "a remote member from its own address");
        assertFalse(MemberAddress.mayClaim(farther, far), "another host claiming a remote member's rank");
        assertFalse(MemberAddress.mayClaim(loop, far), "this host claiming a remote member's rank");
        assertFalse(MemberAddress.mayClaim(far, loop), "another host claiming a member of this host");
        assertTrue(MemberAddress.mayClaim(other, loop), "a member of this host from another address of this host");
        assertTrue(MemberAddress.mayClaim(InetAddress.getByName("::ffff:192.0.2.10"), far), "IPv4-mapped IPv6");
        assertTrue(MemberAddress.mayClaim(farther, InetAddress.getByName("0.0.0.0")), "a member listed at the wildcard");
    }

    @Test
    void aSecretIsCheckedAndNeverShown() {
        assertThrows(IllegalArgumentException.class, () -> GroupConfig.defaults().withSecret(new byte[15]));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GroupConfig.defaults().withSecret(new byte[GroupConfig.MAX_SECRET_BYTES + 1]));
        assertTrue(e.getMessage().contains("not 1025 bytes"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> GroupConfig.defaults().withInboxLimits(0, 1 << 20));
        assertTrue(e.getMessage().contains("not 0 messages"), e.getMessage());
        byte[] s = new byte[32];
        s[0] = 42;
        GroupConfig c = GroupConfig.defaults().withSecret(s);
        s[0] = 0;
        assertEquals(42, c.secret()[0], "the secret was copied in");
        c.secret()[0] = 0;
        assertEquals(42, c.secret()[0], "and is copied out");
        assertTrue(c.toString().contains("secret=32 bytes") && !c.toString().contains("[B@"), c.toString());
        assertEquals(c, GroupConfig.defaults().withSecret(c.secret()).withConnection(c.connection()));
        assertEquals(GroupConfig.DEFAULT_INBOX_MESSAGES, c.inboxMessages());
        assertEquals(GroupConfig.DEFAULT_INBOX_BYTES, c.inboxBytes());
    }
}
