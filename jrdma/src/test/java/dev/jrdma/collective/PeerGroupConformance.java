package dev.jrdma.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Peer groups and their collectives, the same on every provider: groups of 2, 3 and 8 (and 64
 * where the provider's subclass says so), every collective checked element by element, bad
 * input, a member that never comes, and a member that dies in the middle of a collective.
 * Members of one test share a few {@code Rdma}s (each member listens on its own port).
 */
abstract class PeerGroupConformance {
    static final long T = 60;
    private final List<Rdma> rdmas = new ArrayList<>();
    private final List<PeerGroup> groups = new ArrayList<>();

    protected abstract String provider();

    private static final java.util.Set<Integer> GIVEN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** The address member {@code i} of a new group listens on: a free port, never one given before in this JVM. */
    protected InetSocketAddress address(int i) {
        while (true) {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                if (GIVEN.add(s.getLocalPort())) {   // the kernel may hand a just-closed port out again
                    return new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    protected Rdma.Builder builder() {
        return Rdma.builder().provider(provider());
    }

    @AfterEach
    void closeAll() {
        groups.forEach(PeerGroup::close);
        rdmas.forEach(Rdma::close);
    }

    /** {@code n} members formed concurrently over {@code shared} new Rdmas. */
    List<PeerGroup> group(int n, int shared, GroupConfig config) throws Exception {
        List<Rdma> own = new ArrayList<>();
        for (int i = 0; i < Math.min(n, shared); i++) {
            Rdma r = builder().build();
            own.add(r);
            rdmas.add(r);
        }
        return group(n, own, config);
    }

    /** {@code n} members formed concurrently over the given Rdmas. */
    List<PeerGroup> group(int n, List<Rdma> own, GroupConfig config) throws Exception {
        List<InetSocketAddress> members = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            members.add(address(i));
        }
        List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
        // The highest ranks first: they find nobody listening yet and must retry.
        for (int i = n - 1; i >= 0; i--) {
            joining.add(0, PeerGroup.joinAsync(own.get(i % own.size()), members, i, config));
        }
        List<PeerGroup> g = new ArrayList<>();
        for (CompletableFuture<PeerGroup> f : joining) {
            g.add(f.get(T * 2, TimeUnit.SECONDS));
        }
        groups.addAll(g);
        return g;
    }

    List<PeerGroup> group(int n) throws Exception {
        return group(n, 3, GroupConfig.defaults());
    }

    /** Runs one collective on every member at once and waits for all. */
    /** Waits until member {@code m}'s running collective waits for {@code rank} and nobody else. */
    static void awaitWaitingOnlyFor(PeerGroup m, int rank) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!m.waitingFor().equals(java.util.Set.of(rank))) {
            if (System.nanoTime() > deadline) {
                fail("rank " + m.rank() + " waits for " + m.waitingFor() + ", not for rank " + rank + " alone, after " + T + " s");
            }
            Thread.yield();
        }
    }

    static void onAll(List<PeerGroup> g, IntFunction<CompletableFuture<Void>> op) throws Exception {
        List<CompletableFuture<Void>> f = new ArrayList<>();
        for (int i = 0; i < g.size(); i++) {
            f.add(op.apply(i));
        }
        for (CompletableFuture<Void> x : f) {
            x.get(T, TimeUnit.SECONDS);
        }
    }

    /** A byte that says where it came from: member, block and index within the block. */
    static byte mark(int from, int block, int i) {
        return (byte) (from * 31 + block * 7 + i + 1);
    }

    static LocalRegion region(PeerGroup g, long bytes) {
        return g.rdma().allocate(bytes);   // from the Rdma the member's connections run on
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 8})
    void allToAllPairwiseAndSequentialDeliverEveryBlockToItsPlace(int n) throws Exception {
        List<PeerGroup> g = group(n);
        int bs = 24;
        for (AllToAllAlgorithm alg : AllToAllAlgorithm.values()) {
            List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                LocalRegion s = region(g.get(r), (long) n * bs), d = region(g.get(r), (long) n * bs);
                for (int b = 0; b < n; b++) {
                    for (int i = 0; i < bs; i++) {
                        s.segment().set(ValueLayout.JAVA_BYTE, (long) b * bs + i, mark(r, b, i));
                    }
                }
                send.add(s);
                recv.add(d);
            }
            onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), bs, alg));
            for (int r = 0; r < n; r++) {
                for (int from = 0; from < n; from++) {
                    for (int i = 0; i < bs; i++) {
                        assertEquals(mark(from, r, i), recv.get(r).segment().get(ValueLayout.JAVA_BYTE, (long) from * bs + i),
                                alg + ": member " + r + ", block from " + from + ", byte " + i);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 8})
    void broadcastGatherScatterAllGatherAndBarrier(int n) throws Exception {
        List<PeerGroup> g = group(n);
        int bs = 16, root = n - 1;
        // broadcast from the last rank
        List<LocalRegion> b = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            LocalRegion x = region(g.get(r), 100);
            if (r == root) {
                for (int i = 0; i < 100; i++) {
                    x.segment().set(ValueLayout.JAVA_BYTE, i, mark(root, 0, i));
                }
            }
            b.add(x);
        }
        onAll(g, r -> g.get(r).broadcast(root, b.get(r)));
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < 100; i++) {
                assertEquals(mark(root, 0, i), b.get(r).segment().get(ValueLayout.JAVA_BYTE, i), "broadcast: member " + r + " byte " + i);
            }
        }
        // gather to rank 0, scatter from rank 0, allGather
        List<LocalRegion> one = new ArrayList<>(), all = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            LocalRegion s = region(g.get(r), bs);
            for (int i = 0; i < bs; i++) {
                s.segment().set(ValueLayout.JAVA_BYTE, i, mark(r, 1, i));
            }
            one.add(s);
            all.add(region(g.get(r), (long) n * bs));
        }
        onAll(g, r -> g.get(r).gather(0, one.get(r), r == 0 ? all.get(r) : null, bs));
        for (int from = 0; from < n; from++) {
            for (int i = 0; i < bs; i++) {
                assertEquals(mark(from, 1, i), all.get(0).segment().get(ValueLayout.JAVA_BYTE, (long) from * bs + i), "gather: block " + from);
            }
        }
        List<LocalRegion> got = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            got.add(region(g.get(r), bs));
        }
        onAll(g, r -> g.get(r).scatter(0, r == 0 ? all.get(0) : null, got.get(r), bs));   // the gathered blocks go back
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < bs; i++) {
                assertEquals(mark(r, 1, i), got.get(r).segment().get(ValueLayout.JAVA_BYTE, i), "scatter: member " + r);
            }
        }
        List<LocalRegion> gathered = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            gathered.add(region(g.get(r), (long) n * bs));
        }
        onAll(g, r -> g.get(r).allGather(one.get(r), gathered.get(r), bs));
        for (int r = 0; r < n; r++) {
            for (int from = 0; from < n; from++) {
                for (int i = 0; i < bs; i++) {
                    assertEquals(mark(from, 1, i), gathered.get(r).segment().get(ValueLayout.JAVA_BYTE, (long) from * bs + i),
                            "allGather: member " + r + " block " + from);
                }
            }
        }
        // Many barriers in a row, called without waiting for the one before: they queue up on
        // each member and run in order.
        List<CompletableFuture<Void>> queued = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            for (PeerGroup m : g) {
                queued.add(m.barrier());
            }
        }
        for (CompletableFuture<Void> q : queued) {
            q.get(T, TimeUnit.SECONDS);
        }
    }

    /** The largest group this provider is tested with (64 on the software providers: all on one host). */
    protected int largestGroup() {
        return 64;
    }

    @Test
    void theLargestGroupFormsAFullMeshAndExchangesAllToAll() throws Exception {
        int n = largestGroup(), bs = 8;
        // 4 032 connection ends: a few receive buffers each, not the default 64 x 4 KiB (1 GiB in all).
        List<PeerGroup> g = group(n, 4, GroupConfig.defaults().withJoinTimeout(Duration.ofSeconds(120))
                .withConnection(dev.jrdma.ConnectionConfig.builder().receiveQueueDepth(8).receiveBufferSize(256).build()));
        for (PeerGroup m : g) {
            for (int p = 0; p < n; p++) {
                if (p != m.rank()) {
                    assertEquals(dev.jrdma.ConnectionState.ESTABLISHED, m.connection(p).state(), "rank " + m.rank() + " to " + p);
                }
            }
        }
        List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            LocalRegion s = region(g.get(r), (long) n * bs);
            for (int b = 0; b < n; b++) {
                s.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, (long) b * bs, (long) r << 32 | b);
            }
            send.add(s);
            recv.add(region(g.get(r), (long) n * bs));
        }
        for (AllToAllAlgorithm alg : AllToAllAlgorithm.values()) {
            recv.forEach(x -> x.segment().fill((byte) 0));
            onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), bs, alg));
            for (int r = 0; r < n; r++) {
                for (int from = 0; from < n; from++) {
                    assertEquals((long) from << 32 | r, recv.get(r).segment().get(ValueLayout.JAVA_LONG_UNALIGNED, (long) from * bs),
                            alg + ": member " + r + ", block from " + from);
                }
            }
        }
        onAll(g, r -> g.get(r).barrier());
        // Every member closes at once (0.1: 3 of 64 close() calls threw RdmaTimeoutException out
        // of try-with-resources): none throws, and each returns within its bound (6 s) plus slack.
        List<CompletableFuture<Long>> closing = new ArrayList<>();
        for (PeerGroup m : g) {
            closing.add(CompletableFuture.supplyAsync(() -> {
                long t0 = System.nanoTime();
                m.close();
                return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            }, r -> Thread.ofPlatform().start(r)));
        }
        long slowest = 0;
        for (CompletableFuture<Long> f : closing) {
            slowest = Math.max(slowest, f.get(60, TimeUnit.SECONDS));
        }
        assertTrue(slowest < 20_000, "the slowest of " + n + " concurrent group closes took " + slowest + " ms");
    }

    @Test
    void aGroupGrownByAcceptingItsMembersGivesEachARankAndWorks() throws Exception {
        int n = 6, bs = 8;
        Rdma host = builder().build(), others = builder().build();
        rdmas.add(host);
        rdmas.add(others);
        InetSocketAddress rendezvous = address(0);
        List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
        // Members first: they find nobody at the rendezvous and try again.
        long refused = GroupRendezvous.REFUSED_ATTEMPTS.get();
        for (int i = 1; i < n; i++) {
            joining.add(PeerGroup.joinViaAsync(others, rendezvous, address(i), GroupConfig.defaults()));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (GroupRendezvous.REFUSED_ATTEMPTS.get() < refused + n - 1) {   // each was refused at least once
            assertTrue(System.nanoTime() < deadline, "the members did not all try the rendezvous");
            Thread.yield();
        }
        PeerGroup zero = PeerGroup.hostAsync(host, rendezvous, n, GroupConfig.defaults()).get(T, TimeUnit.SECONDS);
        List<PeerGroup> g = new ArrayList<>(java.util.Collections.nCopies(n, null));
        g.set(0, zero);
        groups.add(zero);
        for (CompletableFuture<PeerGroup> f : joining) {
            PeerGroup m = f.get(T, TimeUnit.SECONDS);
            groups.add(m);
            assertEquals(n, m.size());
            assertEquals(zero.members(), m.members(), "every member got the same list");
            assertTrue(g.get(m.rank()) == null, "rank " + m.rank() + " given twice");
            g.set(m.rank(), m);
        }
        List<LocalRegion> one = new ArrayList<>(), all = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            LocalRegion s = region(g.get(r), bs);
            s.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 1000 + r);
            one.add(s);
            all.add(region(g.get(r), (long) n * bs));
        }
        onAll(g, r -> g.get(r).allGather(one.get(r), all.get(r), bs));
        for (int r = 0; r < n; r++) {
            for (int from = 0; from < n; from++) {
                assertEquals(1000 + from, all.get(r).segment().get(ValueLayout.JAVA_LONG_UNALIGNED, (long) from * bs));
            }
        }
    }

    @Test
    void aHostWhoseMembersDoNotAllComeFailsSayingHowManyAreMissing() throws Exception {
        Rdma host = builder().build();
        rdmas.add(host);
        CompletableFuture<PeerGroup> f = PeerGroup.hostAsync(host, address(0), 3,
                GroupConfig.defaults().withJoinTimeout(Duration.ofMillis(700)));
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(T, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("2 of 2 members did not come within 700 ms"), e.getCause().getMessage());
    }

    @Test
    void closingGroupsLeavesNoConnectionFdMappingOrThread() throws Exception {
        // The Rdmas stay: what each cycle's groups made (connections, listeners, exposures,
        // control buffers) must be gone once the groups are closed.
        List<Rdma> two = List.of(builder().build(), builder().build());
        rdmas.addAll(two);
        Runnable cycle = () -> {
            try {
                List<PeerGroup> g = group(4, two, GroupConfig.defaults());
                List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
                for (PeerGroup m : g) {
                    send.add(region(m, 4 * 64));
                    recv.add(region(m, 4 * 64));
                }
                onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), 64));
                onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), 64, AllToAllAlgorithm.SEQUENTIAL));
                onAll(g, r -> g.get(r).barrier());
                g.forEach(PeerGroup::close);
                send.forEach(LocalRegion::close);
                recv.forEach(LocalRegion::close);
                groups.clear();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        cycle.run();   // warm-up: the JDK's delay scheduler thread and the pool's first chunks stay
        var before = dev.jrdma.provider.verbs.ffi.VerbsLeakTest.snapshot(false);
        for (int i = 0; i < 3; i++) {
            cycle.run();
        }
        var after = dev.jrdma.provider.verbs.ffi.VerbsLeakTest.settledSnapshot(false, before);
        assertEquals(before.fds(), after.fds(), "open file descriptors");
        assertEquals(before.sharedMappings(), after.sharedMappings(), "shared-memory mappings (shm: memfds, ours and peers')");
        assertEquals(before.threads(), after.threads(), "threads");
    }

    @Test
    void aBarrierWaitsForTheLastMember() throws Exception {
        List<PeerGroup> g = group(3);
        CompletableFuture<Void> first = g.get(0).barrier(), second = g.get(1).barrier();
        assertThrows(TimeoutException.class, () -> first.get(300, TimeUnit.MILLISECONDS), "rank 2 has not come yet");
        assertTrue(!second.isDone());
        g.get(2).barrierSync();
        first.get(T, TimeUnit.SECONDS);
        second.get(T, TimeUnit.SECONDS);
    }

    @Test
    void aMemberThatNeverCallsTheCollectiveIsNamedWhenItTimesOut() throws Exception {
        List<PeerGroup> g = group(3, 3, GroupConfig.defaults().withCollectiveTimeout(Duration.ofSeconds(3)));
        CompletableFuture<Void> a = g.get(0).barrier(), b = g.get(1).barrier();
        ExecutionException e = assertThrows(ExecutionException.class, () -> a.get(T, TimeUnit.SECONDS));
        CollectiveException ce = (CollectiveException) e.getCause();
        assertEquals(2, ce.rank(), ce.getMessage());
        assertTrue(ce.getMessage().contains("barrier #1") && ce.getMessage().contains("timed out")
                && ce.getMessage().contains("rank 2"), ce.getMessage());
        assertEquals(2, ((CollectiveException) assertThrows(ExecutionException.class, () -> b.get(T, TimeUnit.SECONDS)).getCause()).rank());
        // The group is broken now: the next collective fails at once, and close is clean.
        CollectiveException next = assertThrows(CollectiveException.class, () -> g.get(0).barrierSync());
        assertTrue(next.getMessage().contains("broken"), next.getMessage());
        g.forEach(PeerGroup::close);
        assertThrows(CollectiveException.class, () -> g.get(0).barrierSync(), "closed");
    }

    @Test
    void aMemberThatDiesInTheMiddleOfACollectiveIsNamedOnEveryOtherMember() throws Exception {
        // Members 0..3 on their own Rdma each; member 3's Rdma is closed (its process "dies")
        // while the others wait in an all-to-all for its block.
        List<PeerGroup> g = group(4, 4, GroupConfig.defaults());
        int bs = 64;
        List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            send.add(region(g.get(r), 4L * bs));
            recv.add(region(g.get(r), 4L * bs));
        }
        onAll(g, r -> g.get(r).allToAll(send.get(r), recv.get(r), bs));   // a first one works
        List<CompletableFuture<Void>> waiting = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            waiting.add(g.get(r).allToAll(send.get(r), recv.get(r), bs));
        }
        for (int r = 0; r < 3; r++) {
            awaitWaitingOnlyFor(g.get(r), 3);
        }
        g.get(3).rdma().close();
        for (int r = 0; r < 3; r++) {
            CompletableFuture<Void> w = waiting.get(r);
            ExecutionException e = assertThrows(ExecutionException.class, () -> w.get(T, TimeUnit.SECONDS));
            if (!(e.getCause() instanceof CollectiveException ce)) {
                fail("not a CollectiveException", e.getCause());
                return;
            }
            assertEquals(3, ce.rank(), ce.getMessage());
            assertTrue(ce.getMessage().contains("allToAll(PAIRWISE) #2"), ce.getMessage());
        }
        for (int r = 0; r < 3; r++) {
            g.get(r).close();
        }
    }

    /** The device a member in another process uses ("-": the provider's default). */
    protected String childDevice() {
        return "-";
    }

    @Test
    void aMemberProcessKilledWithSigkillIsNamedOnEveryOtherMember() throws Exception {
        int n = 3, child = 2, bs = 32;
        Rdma here = builder().build();
        rdmas.add(here);
        List<InetSocketAddress> members = List.of(address(0), address(1), address(2));
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", childClassPath(), GroupMemberMain.class.getName(),
                provider(), childDevice(), String.valueOf(child), "wait"));
        members.forEach(a -> cmd.add(a.getAddress().getHostAddress() + ":" + a.getPort()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            List<CompletableFuture<PeerGroup>> joining = List.of(PeerGroup.joinAsync(here, members, 0, GroupConfig.defaults()),
                    PeerGroup.joinAsync(here, members, 1, GroupConfig.defaults()));
            List<PeerGroup> g = new ArrayList<>();
            for (CompletableFuture<PeerGroup> f : joining) {
                g.add(f.get(T * 2, TimeUnit.SECONDS));
            }
            groups.addAll(g);
            onAll(g, r -> g.get(r).barrier());
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
            CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
                try {
                    StringBuilder seen = new StringBuilder();
                    for (String line; (line = out.readLine()) != null; ) {
                        if (line.equals("ready")) {
                            return line;
                        }
                        seen.append(line).append('\n');
                    }
                    return seen.toString();
                } catch (IOException e) {
                    return e.toString();
                }
            });
            assertEquals("ready", ready.get(T, TimeUnit.SECONDS), "the member process joined and passed the barrier");
            List<CompletableFuture<Void>> waiting = new ArrayList<>();
            for (PeerGroup m : g) {
                waiting.add(m.allToAll(region(m, (long) n * bs), region(m, (long) n * bs), bs));
            }
            for (PeerGroup m : g) {
                awaitWaitingOnlyFor(m, child);
            }
            assertTrue(waiting.stream().noneMatch(CompletableFuture::isDone), "they wait for rank 2");
            p.destroyForcibly();   // SIGKILL: no goodbye on any connection
            for (CompletableFuture<Void> w : waiting) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> w.get(T, TimeUnit.SECONDS));
                CollectiveException ce = (CollectiveException) e.getCause();
                assertEquals(child, ce.rank(), ce.getMessage());
                assertTrue(ce.getMessage().contains("allToAll(PAIRWISE) #2"), ce.getMessage());
            }
            g.forEach(PeerGroup::close);
        } finally {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** A member process of {@link GroupMemberMain}; its output lines go to {@code lines}. */
    private Process member(int rank, String mode, List<InetSocketAddress> members,
                           java.util.concurrent.BlockingQueue<String> lines) throws IOException {
        return member(provider(), childDevice(), rank, mode, members, lines);
    }

    /** {@link GroupMemberMain} as {@code rank} on {@code provider}'s {@code device}, in {@code mode}. */
    static Process member(String provider, String device, int rank, String mode, List<InetSocketAddress> members,
                          java.util.concurrent.BlockingQueue<String> lines) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", childClassPath(), GroupMemberMain.class.getName(),
                provider, device, String.valueOf(rank), mode));
        members.forEach(a -> cmd.add(a.getAddress().getHostAddress() + ":" + a.getPort()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Thread.ofVirtual().start(() -> {
            try (java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))) {
                for (String line; (line = out.readLine()) != null; ) {
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add(e.toString());
            }
        });
        return p;
    }

    /** The next line of {@code lines} that is one of {@code wanted} (JUL lines skipped), naming what came instead. */
    static String awaitLine(java.util.concurrent.BlockingQueue<String> lines, String... wanted) throws InterruptedException {
        StringBuilder seen = new StringBuilder();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T * 3);
        while (System.nanoTime() < deadline) {
            String l = lines.poll(1, TimeUnit.SECONDS);
            if (l == null) {
                continue;
            }
            for (String w : wanted) {
                if (l.equals(w) || (w.endsWith("*") && l.startsWith(w.substring(0, w.length() - 1)))) {
                    return l;
                }
            }
            seen.append(l).append('\n');
        }
        return fail("none of " + java.util.Arrays.toString(wanted) + " from the member process; it printed:\n" + seen);
    }

    @Test
    void aMemberKilledAndStartedAgainRejoinsWithItsRankAndLaterCollectivesSucceed() throws Exception {
        int n = 3, child = 1, bs = GroupMemberMain.BLOCK;   // rank 1: rank 0 accepts it again, rank 2 connects to it again
        GroupConfig config = GroupMemberMain.config();
        Rdma here = builder().build();
        rdmas.add(here);
        List<InetSocketAddress> members = List.of(address(0), address(1), address(2));
        java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
        Process first = member(child, "wait", members, lines);
        Process again = null;
        try {
            List<CompletableFuture<PeerGroup>> joining = List.of(PeerGroup.joinAsync(here, members, 0, config),
                    PeerGroup.joinAsync(here, members, 2, config));
            List<PeerGroup> g = new ArrayList<>();
            for (CompletableFuture<PeerGroup> f : joining) {
                g.add(f.get(T * 3, TimeUnit.SECONDS));
            }
            groups.addAll(g);
            onAll(g, r -> g.get(r).barrier());
            assertEquals("ready", awaitLine(lines, "ready"), "the member process joined and passed the barrier");
            // The collective running when it dies fails, naming it.
            List<CompletableFuture<Void>> waiting = new ArrayList<>();
            for (PeerGroup m : g) {
                waiting.add(m.allToAll(region(m, (long) n * 32), region(m, (long) n * 32), 32));
            }
            for (PeerGroup m : g) {
                awaitWaitingOnlyFor(m, child);
            }
            first.destroyForcibly();   // SIGKILL
            assertTrue(first.waitFor(T, TimeUnit.SECONDS));
            for (CompletableFuture<Void> w : waiting) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> w.get(T, TimeUnit.SECONDS));
                CollectiveException ce = (CollectiveException) e.getCause();
                assertEquals(child, ce.rank(), ce.getMessage());
                assertTrue(ce.getMessage().contains("allToAll(PAIRWISE) #2"), ce.getMessage());
            }
            // Called while it is away: these wait for it.
            List<LocalRegion> recvs = new ArrayList<>();
            List<CompletableFuture<Void>> gathers = new ArrayList<>();
            for (PeerGroup m : g) {
                LocalRegion send = region(m, bs), recv = region(m, (long) n * bs);
                for (int i = 0; i < bs; i++) {
                    send.segment().set(ValueLayout.JAVA_BYTE, i, mark(m.rank(), 0, i));
                }
                recvs.add(recv);
                gathers.add(m.allGather(send, recv, bs));
            }
            assertTrue(gathers.stream().noneMatch(CompletableFuture::isDone), "the all-gather waits for rank 1 to come back");
            again = member(child, "rejoin", members, lines);
            assertEquals("joined", awaitLine(lines, "joined", "bad: *"), "the restarted member joined with its rank");
            for (CompletableFuture<Void> f : gathers) {
                f.get(T * 3, TimeUnit.SECONDS);
            }
            for (int k = 0; k < g.size(); k++) {
                for (int from = 0; from < n; from++) {
                    for (int i = 0; i < bs; i++) {
                        if (recvs.get(k).segment().get(ValueLayout.JAVA_BYTE, (long) from * bs + i) != mark(from, 0, i)) {
                            fail("rank " + g.get(k).rank() + ": byte " + i + " of rank " + from + "'s block after the rejoin");
                        }
                    }
                }
            }
            onAll(g, r -> g.get(r).barrier());
            assertEquals("ok", awaitLine(lines, "ok", "bad: *"), "the restarted member's all-gather and barrier");
            assertTrue(again.waitFor(T, TimeUnit.SECONDS), "the restarted member exits after its collectives");
            assertEquals(0, again.exitValue());
            g.forEach(PeerGroup::close);
        } finally {
            destroy(first, again);
        }
    }

    /** Kills the member processes that were started (null: not started) and waits for each, 10 s at most. */
    static void destroy(Process... processes) throws InterruptedException {
        for (Process p : processes) {
            if (p != null) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    static String childClassPath() {
        try {
            return java.nio.file.Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    + java.io.File.pathSeparator
                    + java.nio.file.Path.of(GroupMemberMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void badInputIsRefusedWithWhatIsWrong() throws Exception {
        List<PeerGroup> g = group(2, 2, GroupConfig.defaults().withCollectiveTimeout(Duration.ofSeconds(2)));
        PeerGroup a = g.get(0);
        LocalRegion small = region(a, 10), enough = region(a, 64);
        assertMessage(IllegalArgumentException.class, "root 2 is not a rank of this group of 2", () -> a.broadcast(2, enough));
        assertMessage(IllegalArgumentException.class, "blockSize must be positive", () -> a.allToAll(enough, enough, 0));
        assertMessage(IllegalArgumentException.class, "send is 10 bytes, 2 blocks of 8 need 16", () -> a.allToAll(small, enough, 8));
        assertMessage(IllegalArgumentException.class, "recv is 10 bytes", () -> a.allGather(enough, small, 8));
        assertMessage(NullPointerException.class, "gather: send", () -> a.gather(0, null, enough, 8));
        assertMessage(IllegalArgumentException.class, "send and recv overlap", () -> a.allToAll(enough, enough, 8));
        assertMessage(IllegalArgumentException.class, "send and recv overlap",
                () -> a.allGather(enough.slice(0, 8), enough.slice(0, 16), 8));
        assertMessage(IllegalArgumentException.class, "connection: rank 0 is this member", () -> a.connection(0));
        Rdma inline = builder().ioThreads(Rdma.INLINE).build();
        rdmas.add(inline);
        assertMessage(IllegalArgumentException.class, "ioThreads(Rdma.INLINE)",
                () -> PeerGroup.joinAsync(inline, List.of(address(0), address(1)), 0, GroupConfig.defaults()));
        InetSocketAddress x = address(0);
        assertMessage(IllegalArgumentException.class, "is listed twice",
                () -> PeerGroup.joinAsync(rdmas.get(0), List.of(x, x), 0, GroupConfig.defaults()));
        assertMessage(IllegalArgumentException.class, "rank 5 is not a rank of a group of 2",
                () -> PeerGroup.joinAsync(rdmas.get(0), List.of(x, address(1)), 5, GroupConfig.defaults()));
        assertMessage(IllegalArgumentException.class, "rejoinTimeout must be zero (no rejoin) or positive",
                () -> GroupConfig.defaults().withRejoinTimeout(Duration.ofSeconds(-1)));
        assertMessage(IllegalArgumentException.class, "the member list is empty",
                () -> PeerGroup.joinAsync(rdmas.get(0), List.of(), 0, GroupConfig.defaults()));
        // Members that disagree on the sizes: the writer finds the other's region too small and names it.
        LocalRegion big = region(a, 64), bigRecv = region(a, 64);
        LocalRegion b16 = region(g.get(1), 16), r16 = region(g.get(1), 16);
        CompletableFuture<Void> fa = a.allToAll(big, bigRecv, 32), fb = g.get(1).allToAll(b16, r16, 8);
        ExecutionException e = assertThrows(ExecutionException.class, () -> fa.get(T, TimeUnit.SECONDS));
        CollectiveException ce = (CollectiveException) e.getCause();
        assertEquals(1, ce.rank());
        assertTrue(ce.getMessage().contains("rank 1's receive region is 16 bytes"), ce.getMessage());
        assertThrows(ExecutionException.class, () -> fb.get(T, TimeUnit.SECONDS), "rank 1 never gets its block from rank 0");
    }

    @Test
    void aMemberThatNeverStartsFailsTheJoinNamingIt() throws Exception {
        Rdma r = builder().build();
        rdmas.add(r);
        List<InetSocketAddress> members = List.of(address(0), address(1), address(2));
        CompletableFuture<PeerGroup> j = PeerGroup.joinAsync(r, members, 1, GroupConfig.defaults().withJoinTimeout(Duration.ofMillis(1500)));
        ExecutionException e = assertThrows(ExecutionException.class, () -> j.get(T, TimeUnit.SECONDS));
        CollectiveException ce = (CollectiveException) e.getCause();
        assertEquals(0, ce.rank(), ce.getMessage());
        assertTrue(ce.getMessage().contains("ranks [0, 2]"), ce.getMessage());
    }

    static void assertMessage(Class<? extends Throwable> type, String part, org.junit.jupiter.api.function.Executable op) {
        Throwable t = assertThrows(type, op);
        assertTrue(t.getMessage() != null && t.getMessage().contains(part), "expected '" + part + "' in: " + t.getMessage());
    }
}
