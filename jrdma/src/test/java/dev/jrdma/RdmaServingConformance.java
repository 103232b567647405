package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.provider.verbs.ffi.VerbsLeakTest;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.CompletionHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * A server under load on every transport: 64 connections at once, accepting while others transfer,
 * several application threads on one connection, a peer process killed mid-run, and no leak.
 */
abstract class RdmaServingConformance {
    /** What this run goes over: verbs in the VM, or a software provider on the host. */
    protected abstract Transport transport();

    private static final long T = 60;   // seconds, for every wait (the VM is slow with 64 connections)
    /** Small queues: 64 connections each side fit the VM's memory easily. */
    private static final ConnectionConfig SMALL = ConnectionConfig.builder().sendQueueDepth(16).receiveQueueDepth(4)
            .receiveBufferSize(256).build();

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static void join(List<Thread> ts, AtomicReference<Throwable> err) throws InterruptedException {
        for (Thread t : ts) {
            t.join(TimeUnit.SECONDS.toMillis(T * 2));
            assertFalse(t.isAlive(), "bounded: " + t.getName());
        }
        if (err.get() != null) {
            throw new AssertionError(err.get());
        }
    }

    @Test
    void sixtyFourConnectionsToOneServerAtOnce() throws Exception {
        try (Rdma server = transport().server().ioThreads(2).build();
             Rdma client = transport().client().ioThreads(2)
                     .completionMode(CompletionMode.EVENT).build()) {
            int n = 64;
            LocalRegion exposed = server.allocate(64L * n);
            RdmaServer l = server.listen(transport().nextServerAddress(), SMALL, c -> { });
            List<CompletableFuture<Connection>> pending = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                pending.add(client.connectAsync(l.address(), SMALL));
            }
            List<Connection> conns = new ArrayList<>();
            for (CompletableFuture<Connection> f : pending) {
                conns.add(f.get(T, TimeUnit.SECONDS));
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (l.connections().size() < n && System.nanoTime() < until) {
                Thread.sleep(20);   // the server's ESTABLISHED events may come after the clients'
            }
            assertEquals(n, l.connections().size());
            RemoteRegion r = exposed.toRemote();
            LocalRegion src = client.allocate(64L * n);
            src.segment().copyFrom(MemorySegment.ofArray(pattern(64 * n, 64)));
            List<CompletableFuture<Void>> writes = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                writes.add(conns.get(i).write(src.slice(64L * i, 64), r.slice(64L * i, 64)));
            }
            for (CompletableFuture<Void> w : writes) {
                w.get(T, TimeUnit.SECONDS);
            }
            assertArrayEquals(pattern(64 * n, 64), exposed.segment().toArray(ValueLayout.JAVA_BYTE), "each wrote its own slice");
            java.util.Set<Integer> qpNums = new java.util.HashSet<>();
            for (Connection c : conns) {
                assertEquals("RTS", c.queuePair().state());
                qpNums.add(c.queuePair().qpNumber());
            }
            assertEquals(n, qpNums.size(), "64 distinct QPs");
            for (Connection c : conns) {
                c.close();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (!l.connections().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, l.connections().size(), "the server saw every disconnect");
        }
    }

    @Test
    void serverAcceptsWhileOthersTransfer() throws Exception {
        try (Rdma server = transport().server().build();
             Rdma client = transport().client().ioThreads(2).build()) {
            LocalRegion exposed = server.allocate(4 * 4096 + 8);   // a 4 KiB slice per busy connection, then a word
            RdmaServer l = server.listen(transport().nextServerAddress(), SMALL, c -> { });
            RemoteRegion r = exposed.toRemote();
            List<Connection> busy = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                busy.add(client.connect(l.address(), SMALL));
            }
            AtomicReference<Throwable> err = new AtomicReference<>();
            AtomicInteger rounds = new AtomicInteger();
            List<Thread> ts = new ArrayList<>();
            CompletableFuture<Void> acceptedAll = new CompletableFuture<>();
            for (int i = 0; i < 4; i++) {
                int id = i;
                ts.add(Thread.ofPlatform().name("transfer-" + i).start(() -> {
                    try (LocalRegion out = client.allocate(4096); LocalRegion in = client.allocate(4096)) {
                        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                        for (int round = 0; round < 400 && System.nanoTime() < end; round++) {
                            byte[] data = pattern(4096, id * 1000L + round);
                            out.segment().copyFrom(MemorySegment.ofArray(data));
                            busy.get(id).writeSync(out, r.slice(4096L * id, 4096));
                            busy.get(id).readSync(r.slice(4096L * id, 4096), in);
                            assertArrayEquals(data, in.segment().toArray(ValueLayout.JAVA_BYTE));
                            rounds.incrementAndGet();
                            if (acceptedAll.isDone() && round >= 20) {
                                break;
                            }
                        }
                    } catch (Throwable e) {
                        err.compareAndSet(null, e);
                    }
                }));
            }
            // Meanwhile: 16 more connections come and go, each used once.
            LocalRegion one = client.allocate(8);
            for (int i = 0; i < 16; i++) {
                try (Connection c = client.connect(l.address(), SMALL)) {
                    one.segment().set(ValueLayout.JAVA_LONG, 0, i);
                    c.writeSync(one, r.slice(4 * 4096, 8));
                    assertEquals(i, exposed.segment().get(ValueLayout.JAVA_LONG, 4 * 4096));
                }
            }
            int during = rounds.get();
            acceptedAll.complete(null);
            join(ts, err);
            assertTrue(during > 0, "transfers ran while the server accepted");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (l.connections().size() > 4 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(4, l.connections().size(), "the 16 short ones are gone, the busy ones still there");
            for (Connection c : busy) {
                assertEquals(ConnectionState.ESTABLISHED, c.state());
            }
        }
    }

    /**
     * Posting threads and the completing thread share the send-queue slots without a lock (two
     * single-producer single-consumer rings): threads fire operations without waiting for them,
     * into a send queue of 4, so they wait for room again and again while completions free
     * slots, with batches and masked (emulated where not native) atomics among them. Every
     * operation completes exactly once and every add lands; with an IO thread and inline.
     */
    @Test
    void firingThreadsIntoATinySendQueueCompleteEachOperationOnce() throws Exception {
        ConnectionConfig tiny = ConnectionConfig.builder().sendQueueDepth(4).build();
        for (boolean inline : new boolean[] {false, true}) {
            try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE, tiny, tiny,
                    b -> inline ? b.ioThreads(Rdma.INLINE) : b.ioThreads(1))) {
                RemoteRegion counter = p.remote().slice(4096, 8);
                p.exposed().segment().set(ValueLayout.JAVA_LONG, 4096, 0);
                int threads = 4, each = 150;
                java.util.concurrent.atomic.AtomicIntegerArray calls = new java.util.concurrent.atomic.AtomicIntegerArray(threads * each);
                AtomicInteger finished = new AtomicInteger();
                AtomicReference<Throwable> err = new AtomicReference<>();
                CompletionHandler<Long, Integer> once = new CompletionHandler<>() {
                    public void completed(Long v, Integer op) {
                        calls.incrementAndGet(op);
                        finished.incrementAndGet();
                    }

                    public void failed(Throwable e, Integer op) {
                        err.compareAndSet(null, e);
                        calls.incrementAndGet(op);
                        finished.incrementAndGet();
                    }
                };
                List<Thread> ts = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    ts.add(Thread.ofPlatform().name("firing-" + t).start(() -> {
                        try {
                            for (int i = 0; i < each; i++) {
                                int op = id * each + i;
                                if (i % 10 == 9) {   // a batch of three adds, counted as one operation
                                    p.conn().batch().fetchAndAdd(counter, 1).fetchAndAdd(counter, 1)
                                            .fetchAndAdd(counter, 1).submit()
                                            .whenComplete((v, e) -> {
                                                if (e != null) {
                                                    once.failed(e, op);
                                                } else {
                                                    once.completed(3L, op);
                                                }
                                            });
                                } else if (i % 10 == 4) {
                                    p.conn().maskedFetchAndAdd(counter, 1, 0L, op, once);
                                } else {
                                    p.conn().fetchAndAdd(counter, 1, op, once);
                                }
                            }
                        } catch (Throwable e) {
                            err.compareAndSet(null, e);
                        }
                    }));
                }
                join(ts, err);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                while (finished.get() < threads * each && System.nanoTime() < deadline) {
                    if (inline) {
                        p.client().poll();
                    } else {
                        Thread.sleep(1);
                    }
                }
                assertNull(err.get(), () -> "an operation failed: " + err.get());
                for (int op = 0; op < threads * each; op++) {
                    assertEquals(1, calls.get(op), "operation " + op + " completed " + calls.get(op) + " times (inline " + inline + ")");
                }
                long adds = (long) threads * (each / 10) * 3 + (long) threads * (each - each / 10);
                assertEquals(adds, p.exposed().segment().get(ValueLayout.JAVA_LONG, 4096), "no add lost (inline " + inline + ")");
                assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            }
        }
    }

    @Test
    void severalThreadsShareOneConnection() throws Exception {
        ConnectionConfig tight = ConnectionConfig.builder().sendQueueDepth(8).build();   // threads wait for room
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE, tight, tight)) {
            RemoteRegion r = p.remote();
            int threads = 8, each = 60;
            p.exposed().segment().set(ValueLayout.JAVA_LONG, 8000, 0);
            AtomicReference<Throwable> err = new AtomicReference<>();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                ts.add(Thread.ofPlatform().name("app-" + t).start(() -> {
                    try (LocalRegion out = p.client().allocate(512); LocalRegion in = p.client().allocate(512)) {
                        for (int i = 0; i < each; i++) {
                            byte[] data = pattern(512, id * 100_000L + i);
                            out.segment().copyFrom(MemorySegment.ofArray(data));
                            RemoteRegion mine = r.slice(512L * id, 512);
                            switch (i % 3) {
                                case 0 -> p.conn().write(out, mine).get(T, TimeUnit.SECONDS);
                                case 1 -> p.conn().writeSync(out, mine);
                                default -> {
                                    CompletableFuture<Void> f = new CompletableFuture<>();
                                    p.conn().write(out, mine, f, new CompletionHandler<Void, CompletableFuture<Void>>() {
                                        public void completed(Void v, CompletableFuture<Void> a) {
                                            a.complete(null);
                                        }

                                        public void failed(Throwable e, CompletableFuture<Void> a) {
                                            a.completeExceptionally(e);
                                        }
                                    });
                                    f.get(T, TimeUnit.SECONDS);
                                }
                            }
                            p.conn().readSync(mine, in);
                            assertArrayEquals(data, in.segment().toArray(ValueLayout.JAVA_BYTE));
                            p.conn().fetchAndAdd(r.slice(8000, 8), 1).get(T, TimeUnit.SECONDS);
                        }
                    } catch (Throwable e) {
                        err.compareAndSet(null, e);
                    }
                }));
            }
            join(ts, err);
            assertEquals((long) threads * each, p.exposed().segment().get(ValueLayout.JAVA_LONG, 8000), "no add lost");
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
        }
    }

    @Test
    void peerProcessKilledMidRunFailsItsOperationsAndTheServerKeepsServing() throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().timeout(Duration.ofSeconds(10)).retryCount(3).build();
        try (Rdma server = transport().server().build();
             Rdma client = transport().client().build()) {
            LocalRegion exposed = server.allocate(4096);
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            LinkedBlockingQueue<RemoteRegion> peerRegions = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(transport().nextServerAddress(), config, c -> {
                accepted.add(c);
                c.onReceive((conn, m) -> {
                    if (m.byteCount() == RemoteRegion.DESCRIPTOR_BYTES) {
                        peerRegions.add(RemoteRegion.fromDescriptor(m.data().toArray(ValueLayout.JAVA_BYTE)));
                        LocalRegion d = server.allocate(RemoteRegion.DESCRIPTOR_BYTES);
                        d.segment().copyFrom(MemorySegment.ofArray(exposed.toRemote().toDescriptor()));
                        conn.send(d).whenComplete((v, e) -> d.close());
                    }
                });
            });
            Connection survivor = client.connect(l.address(), config);
            Connection fromSurvivor = accepted.poll(T, TimeUnit.SECONDS);

            String java = ProcessHandle.current().info().command().orElseThrow();
            Process peer = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    VerbsTestAddresses.childClassPath(), KilledPeerMain.class.getName(),
                    transport().provider(), transport().clientDevice(), l.address().getAddress().getHostAddress(),
                    String.valueOf(l.address().getPort())).redirectErrorStream(true).start();
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
                CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
                    try {
                        StringBuilder seen = new StringBuilder();
                        for (String line; (line = out.readLine()) != null; ) {
                            if (line.equals("ready")) {
                                return "ready";
                            }
                            seen.append(line).append('\n');
                        }
                        return seen.toString();
                    } catch (java.io.IOException e) {
                        return e.toString();
                    }
                });
                assertEquals("ready", ready.get(T * 2, TimeUnit.SECONDS), "the peer process connected");
                RemoteRegion peerRegion = peerRegions.poll(T, TimeUnit.SECONDS);
                Connection toPeer = null;
                for (Connection c : accepted) {
                    toPeer = c;
                }
                assertTrue(toPeer != null && toPeer != fromSurvivor);
                LocalRegion in = server.allocate(4096);
                toPeer.readSync(peerRegion, in);   // the peer is there

                // Keep reads going towards the peer, then kill it.
                AtomicReference<Throwable> failure = new AtomicReference<>();
                AtomicInteger completed = new AtomicInteger();
                CompletableFuture<Long> failedAt = new CompletableFuture<>();
                Connection target = toPeer;
                CompletionHandler<Void, Void> again = new CompletionHandler<>() {
                    @Override
                    public void completed(Void v, Void a) {
                        completed.incrementAndGet();
                        target.read(peerRegion, in, null, this);
                    }

                    @Override
                    public void failed(Throwable e, Void a) {
                        if (failure.compareAndSet(null, e)) {
                            failedAt.complete(System.nanoTime());
                        }
                    }
                };
                toPeer.read(peerRegion, in, null, again);
                Thread.sleep(200);
                long killedAt = System.nanoTime();
                peer.destroyForcibly();
                assertTrue(peer.waitFor(T, TimeUnit.SECONDS), "the peer died");
                long failNanos = failedAt.get(config.timeout().toSeconds() + 20, TimeUnit.SECONDS) - killedAt;
                // The peer's end goes (ConnectionClosedException). On verbs the kernel may also tear
                // the dead process's registrations down before its QP, which meanwhile refuses the
                // rkey: IBV_WC_REM_ACCESS_ERR, as the device said (seen on rxe with the pool, whose
                // 4 MiB chunk takes a while to unpin in the VM). Either way the connection is over.
                Throwable first = failure.get();
                if (!(transport().isVerbs() && first instanceof RemoteAccessException rae
                        && rae.status().equals("IBV_WC_REM_ACCESS_ERR"))) {
                    assertInstanceOf(ConnectionClosedException.class, first, String.valueOf(first));
                }
                assertTrue(failNanos < config.timeout().toNanos() + TimeUnit.SECONDS.toNanos(20),
                        "failed " + failNanos / 1_000_000 + " ms after the kill");
                assertTrue(completed.get() > 0, "reads were going on when it was killed");
                ExecutionException later = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> target.read(peerRegion, in).get(T, TimeUnit.SECONDS));
                assertInstanceOf(ConnectionClosedException.class, later.getCause());

                // The server goes on serving the other connection.
                LocalRegion buf = client.allocate(4096);
                buf.segment().copyFrom(MemorySegment.ofArray(pattern(4096, 77)));
                survivor.writeSync(buf, RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor()));
                assertArrayEquals(pattern(4096, 77), exposed.segment().toArray(ValueLayout.JAVA_BYTE));
                assertEquals(ConnectionState.ESTABLISHED, fromSurvivor.state());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                while (l.connections().size() > 1 && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertEquals(List.of(fromSurvivor), List.copyOf(l.connections()), "the dead peer's connection is gone");
            } finally {
                peer.destroyForcibly();
            }
        }
    }

    @Test
    void closingEverythingLeavesNoQueuePairMemoryFdOrThread() throws Exception {
        Runnable cycle = () -> {
            try (TestPair p = TestPair.open(transport(), CompletionMode.EVENT, SMALL, SMALL, b -> b.ioThreads(2))) {
                LocalRegion buf = p.client().allocate(256);
                for (int i = 0; i < 20; i++) {   // shm: the first asks for the mapping, later ones use it
                    p.conn().writeSync(buf, p.remote().slice(0, 256));
                }
                CompletableFuture<Message> reply = p.conn().receive();
                p.conn().sendSync(buf.slice(0, 16));
                reply.join().close();
                p.conn().read(p.remote().slice(0, 256), buf);   // may still be outstanding at close
                p.client().connect(p.listener().address(), SMALL);   // left open: Rdma.close closes it
            }
        };
        cycle.run();   // warm-up: librdmacm opens every device once and keeps it for the process
        // Once the warm-up's IO threads are gone from /proc too (CI once saw two still there).
        VerbsLeakTest.Snapshot before = VerbsLeakTest.snapshotWithoutIoThreads(transport().isVerbs());
        for (int i = 0; i < 3; i++) {
            cycle.run();
        }
        VerbsLeakTest.Snapshot after = VerbsLeakTest.settledSnapshot(transport().isVerbs(), before);
        assertEquals(before.rdmaObjects(), after.rdmaObjects(), "RDMA objects (QP, CQ, PD, MR, cm_id) of this process");
        assertEquals(before.fds(), after.fds(), "open file descriptors");
        assertEquals(before.uverbsMappings(), after.uverbsMappings(), "mappings of /dev/infiniband");
        assertEquals(before.sharedMappings(), after.sharedMappings(), "shared-memory mappings (shm: memfds, ours and peers')");
        assertEquals(before.threads(), after.threads(), "threads");
        assertNull(after.threads().stream().filter(t -> t.startsWith("jrdma-io")).findAny().orElse(null), "no IO thread left");
    }
}
