package dev.jrdma.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Peer groups on real verbs (Soft-RoCE in the VM): rank 0 on the server device and address,
 * rank 1 on the client's; and four members on the four devices of the VM's group (softroce-vm
 * --group 4). Each member has a device of its own: the VM's routing sends traffic between two
 * addresses out of the sending one's device, so two members on one device could not connect to
 * each other. Every collective's data crosses rxe as RDMA WRITE_WITH_IMM.
 */
@Tag("verbs")
class PeerGroupVerbsTest {
    private static int nextPort = 9600 + (int) (ProcessHandle.current().pid() % 300) * 2;
    private final List<Rdma> rdmas = new ArrayList<>();
    private final List<PeerGroup> groups = new ArrayList<>();

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            fail("the verbs suite needs " + name + " (set by scripts/softroce-vm): run it with scripts/verbs-suite");
        }
        return v;
    }

    static synchronized List<InetSocketAddress> members() {
        int p = nextPort;
        nextPort += 2;
        return List.of(new InetSocketAddress(env("JRDMA_VM_IP0"), p), new InetSocketAddress(env("JRDMA_VM_IP1"), p + 1));
    }

    @AfterEach
    void closeAll() {
        groups.forEach(PeerGroup::close);
        rdmas.forEach(Rdma::close);
    }

    private Rdma rdma(String device) {
        Rdma r = Rdma.builder().provider("verbs").device(device).build();
        rdmas.add(r);
        return r;
    }

    @Test
    void everyCollectiveMovesItsBlocksOverRxe() throws Exception {
        List<InetSocketAddress> members = members();
        CompletableFuture<PeerGroup> a = PeerGroup.joinAsync(rdma(env("JRDMA_VM_DEV0")), members, 0, GroupConfig.defaults());
        CompletableFuture<PeerGroup> b = PeerGroup.joinAsync(rdma(env("JRDMA_VM_DEV1")), members, 1, GroupConfig.defaults());
        everyCollective(List.of(a.get(120, TimeUnit.SECONDS), b.get(120, TimeUnit.SECONDS)));
    }

    /**
     * Four members, each on a Soft-RoCE device of its own (softroce-vm --group 4: rxeg0..rxeg3 on
     * one bridged segment), so that every pair of members crosses the wire: the full mesh of
     * connections and every collective's blocks between all of them.
     */
    @Test
    void fourMembersEachOnItsOwnDeviceRunEveryCollective() throws Exception {
        List<String> devices = List.of(env("JRDMA_VM_GROUP_DEVS").split(","));
        List<String> ips = List.of(env("JRDMA_VM_GROUP_IPS").split(","));
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        int port;
        synchronized (PeerGroupVerbsTest.class) {
            port = nextPort;
            nextPort += 4;
        }
        List<InetSocketAddress> members = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            members.add(new InetSocketAddress(ips.get(r), port + r));
        }
        List<CompletableFuture<PeerGroup>> joins = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            joins.add(PeerGroup.joinAsync(rdma(devices.get(r)), members, r, GroupConfig.defaults()));
        }
        List<PeerGroup> g = new ArrayList<>();
        for (CompletableFuture<PeerGroup> j : joins) {
            g.add(j.get(120, TimeUnit.SECONDS));
        }
        everyCollective(g);
    }

    /** Every all-to-all algorithm, allGather, broadcast and barrier over {@code g}, every byte checked. */
    private void everyCollective(List<PeerGroup> g) throws Exception {
        groups.addAll(g);
        int n = g.size(), bs = 4096;
        for (AllToAllAlgorithm alg : AllToAllAlgorithm.values()) {
            List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                LocalRegion s = PeerGroupConformance.region(g.get(r), (long) n * bs);
                for (int blk = 0; blk < n; blk++) {
                    for (int i = 0; i < bs; i++) {
                        s.segment().set(ValueLayout.JAVA_BYTE, (long) blk * bs + i, PeerGroupConformance.mark(r, blk, i));
                    }
                }
                send.add(s);
                recv.add(PeerGroupConformance.region(g.get(r), (long) n * bs));
            }
            PeerGroupConformance.onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), bs, alg));
            for (int r = 0; r < n; r++) {
                for (int from = 0; from < n; from++) {
                    byte[] expected = new byte[bs];
                    for (int i = 0; i < bs; i++) {
                        expected[i] = PeerGroupConformance.mark(from, r, i);
                    }
                    assertArrayEquals(expected, recv.get(r).segment().asSlice((long) from * bs, bs).toArray(ValueLayout.JAVA_BYTE),
                            alg + ": member " + r + " block from " + from);
                }
            }
        }
        List<LocalRegion> one = new ArrayList<>(), all = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            LocalRegion s = PeerGroupConformance.region(g.get(r), 64);
            s.segment().fill((byte) (r + 1));
            one.add(s);
            all.add(PeerGroupConformance.region(g.get(r), 64L * n));
        }
        PeerGroupConformance.onAll(g, r -> g.get(r).allGather(one.get(r), all.get(r), 64));
        PeerGroupConformance.onAll(g, r -> g.get(r).broadcast(1, one.get(r)));
        for (int r = 0; r < n; r++) {
            for (int k = 0; k < n; k++) {
                assertEquals(k + 1, all.get(r).segment().get(ValueLayout.JAVA_BYTE, 64L * k), "allGather: block of rank " + k
                        + " at member " + r);
                assertEquals(k + 1, all.get(r).segment().get(ValueLayout.JAVA_BYTE, 64L * k + 63), "allGather: block of rank "
                        + k + " at member " + r);
            }
            assertEquals(2, one.get(r).segment().get(ValueLayout.JAVA_BYTE, 63), "broadcast from rank 1 at member " + r);
        }
        PeerGroupConformance.onAll(g, r -> g.get(r).barrier());
    }

    @Test
    void aMemberProcessKilledWithSigkillIsNamed() throws Exception {
        List<InetSocketAddress> members = members();
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", PeerGroupConformance.childClassPath(), GroupMemberMain.class.getName(),
                "verbs", env("JRDMA_VM_DEV1"), "1", "wait"));
        members.forEach(m -> cmd.add(m.getAddress().getHostAddress() + ":" + m.getPort()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            // Rank 1 is a cold JVM on the VM's emulated CPU: its start and join took more than
            // the default 60 s in a CI run. Rank 0 waits as long as the child member does (180 s).
            PeerGroup g = PeerGroup.join(rdma(env("JRDMA_VM_DEV0")), members, 0,
                    GroupConfig.defaults().withJoinTimeout(GroupMemberMain.config().joinTimeout()));
            groups.add(g);
            g.barrierSync();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            for (String line; (line = out.readLine()) != null && !line.equals("ready"); ) {
                seen.append(line).append('\n');
            }
            CompletableFuture<Void> waiting = g.allToAll(g.rdma().allocate(128), g.rdma().allocate(128), 64);
            PeerGroupConformance.awaitWaitingOnlyFor(g, 1);
            assertTrue(!waiting.isDone(), "rank 0 waits for rank 1: " + seen);
            p.destroyForcibly();
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(120, TimeUnit.SECONDS));
            CollectiveException ce = (CollectiveException) e.getCause();
            assertEquals(1, ce.rank(), ce.getMessage());
            assertTrue(ce.getMessage().contains("allToAll(PAIRWISE) #2"), ce.getMessage());
        } finally {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /**
     * {@link PeerGroupConformance}'s rejoin on verbs, with the two members the VM allows: rank 1
     * (a process on the client's device) is killed during a collective and started again; rank 0
     * accepts it again, the collective running at the kill failed naming rank 1, and an all-gather
     * and a barrier called while it was away run with it once it is back.
     */
    @Test
    void aMemberKilledAndStartedAgainRejoinsWithItsRank() throws Exception {
        List<InetSocketAddress> members = members();
        int bs = GroupMemberMain.BLOCK;
        java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
        Process first = PeerGroupConformance.member("verbs", env("JRDMA_VM_DEV1"), 1, "wait", members, lines);
        Process again = null;
        try {
            PeerGroup g = PeerGroup.join(rdma(env("JRDMA_VM_DEV0")), members, 0, GroupMemberMain.config());
            groups.add(g);
            g.barrierSync();
            assertEquals("ready", PeerGroupConformance.awaitLine(lines, "ready"));
            CompletableFuture<Void> waiting = g.allToAll(g.rdma().allocate(128), g.rdma().allocate(128), 64);
            PeerGroupConformance.awaitWaitingOnlyFor(g, 1);
            first.destroyForcibly();
            assertTrue(first.waitFor(120, TimeUnit.SECONDS));
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(120, TimeUnit.SECONDS));
            CollectiveException ce = (CollectiveException) e.getCause();
            assertEquals(1, ce.rank(), ce.getMessage());
            LocalRegion send = g.rdma().allocate(bs), recv = g.rdma().allocate(2L * bs);
            for (int i = 0; i < bs; i++) {
                send.segment().set(ValueLayout.JAVA_BYTE, i, PeerGroupConformance.mark(0, 0, i));
            }
            CompletableFuture<Void> gather = g.allGather(send, recv, bs);
            assertTrue(!gather.isDone(), "the all-gather waits for rank 1 to come back");
            again = PeerGroupConformance.member("verbs", env("JRDMA_VM_DEV1"), 1, "rejoin", members, lines);
            assertEquals("joined", PeerGroupConformance.awaitLine(lines, "joined", "bad: *"));
            gather.get(300, TimeUnit.SECONDS);
            for (int from = 0; from < 2; from++) {
                for (int i = 0; i < bs; i++) {
                    if (recv.segment().get(ValueLayout.JAVA_BYTE, (long) from * bs + i) != PeerGroupConformance.mark(from, 0, i)) {
                        fail("byte " + i + " of rank " + from + "'s block after the rejoin");
                    }
                }
            }
            g.barrierSync();
            assertEquals("ok", PeerGroupConformance.awaitLine(lines, "ok", "bad: *"));
            assertTrue(again.waitFor(120, TimeUnit.SECONDS), "the restarted member exits after its collectives");
            assertEquals(0, again.exitValue());
        } finally {
            PeerGroupConformance.destroy(first, again);
        }
    }
}
