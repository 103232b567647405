package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.WorkCompletionException;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A client connection with a {@link ReconnectPolicy}, on every transport: it connects again after
 * the peer closed the connection (descriptors sent before stay good: the peer kept its regions),
 * after the peer process was killed and started again on the same address (its new descriptor
 * works on the same {@link Connection} object), fails operations at once while it is down, gives
 * up after the policy's attempts, and stops when closed. Nothing is replayed: what was outstanding
 * at a failure ended exactly once before the listener heard of the failure.
 */
abstract class ReconnectConformance {
    protected abstract Transport transport();

    private static final long T = 60;   // seconds, for every wait: the emulated VM is slow
    private static final int REGION = 64 * 1024;
    private static final int OUTSTANDING = 64;

    /** What the listener heard, in order, as short strings; with the connection it named. */
    private static final class Events implements ConnectionListener {
        final LinkedBlockingQueue<String> heard = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<Connection> named = new LinkedBlockingQueue<>();
        volatile Outcomes outstanding;
        /** What an operation tried from inside {@link #reconnecting} saw: the state, then the failure. */
        final LinkedBlockingQueue<Object> triedWhileDown = new LinkedBlockingQueue<>();
        volatile LocalRegion probe;
        volatile RemoteRegion probeTarget;
        volatile RdmaException lastGaveUp;

        @Override
        public void connected(Connection c, int attempt) {
            named.add(c);
            heard.add("connected " + attempt);
        }

        @Override
        public void failed(Connection c, RdmaException cause) {
            named.add(c);
            Outcomes o = outstanding;
            // The contract: what was outstanding has ended, each once, before this is told.
            heard.add("failed" + (o == null ? "" : " with " + o.ended.getCount() + " outstanding"));
        }

        @Override
        public void reconnecting(Connection c, int attempt, Duration delay) {
            named.add(c);
            LocalRegion p = probe;
            if (p != null && triedWhileDown.isEmpty()) {
                triedWhileDown.add(c.state());
                CompletableFuture<Void> w = c.write(p, probeTarget);
                triedWhileDown.add(w.isDone() ? w.exceptionNow() : "not failed at once: " + w);
            }
            heard.add("reconnecting " + attempt);
        }

        @Override
        public void gaveUp(Connection c, RdmaException last) {
            named.add(c);
            lastGaveUp = last;
            heard.add("gave up: " + (last == null ? "no cause" : last.getClass().getSimpleName()));
        }

        String next() throws InterruptedException {
            String e = heard.poll(T, TimeUnit.SECONDS);
            assertNotNull(e, "no connection event within " + T + " s");
            return e;
        }
    }

    private static ConnectionConfig withReconnect(ReconnectPolicy policy, Events events) {
        return ConnectionConfig.builder().reconnect(policy, events).build();
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** Writes a fresh pattern through {@code remote} and reads it back both ways: the peer's memory and a read. */
    private static void writeAndCheck(Rdma client, Connection c, RemoteRegion remote, LocalRegion peerMemory, long seed)
            throws Exception {
        byte[] want = pattern(4096, seed);
        try (LocalRegion buf = client.allocate(4096); LocalRegion back = client.allocate(4096)) {
            buf.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(want));
            c.write(buf, remote.slice(8192, 4096)).get(T, TimeUnit.SECONDS);
            c.read(remote.slice(8192, 4096), back).get(T, TimeUnit.SECONDS);
            assertArrayEquals(want, back.segment().toArray(ValueLayout.JAVA_BYTE), "read back after the write");
            if (peerMemory != null) {
                assertArrayEquals(want, peerMemory.segment().asSlice(8192, 4096).toArray(ValueLayout.JAVA_BYTE),
                        "the peer's memory after the write");
            }
        }
    }

    /** Posts {@link #OUTSTANDING} writes of 4 KiB, then runs {@code failure}: some are in flight when it hits. */
    private static Outcomes postThen(Rdma client, Connection c, RemoteRegion remote, Events events, Runnable failure) {
        Outcomes out = new Outcomes(OUTSTANDING, OUTSTANDING);
        events.outstanding = out;
        LocalRegion buf = client.allocate(4096);
        for (int i = 0; i < OUTSTANDING; i++) {
            c.write(buf, remote.slice((i % 8) * 4096L, 4096), i, out.<Void>handler());
        }
        failure.run();
        CompletableFuture.runAsync(() -> {
            try {
                out.ended.await(T, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            buf.close();
        });
        return out;
    }

    /** Each outstanding write ended once, and a failure is the connection's end, nothing else. */
    private static void expectEndedOnce(Outcomes out) throws Exception {
        assertTrue(out.ended.await(T, TimeUnit.SECONDS), out.ended.getCount() + " writes never ended");
        out.expectEachEndedOnce(OUTSTANDING);
        assertEquals(OUTSTANDING, out.succeeded.get() + out.failed.size());
        for (Throwable e : out.failed.values()) {
            assertTrue(e instanceof ConnectionClosedException || e instanceof WorkCompletionException,
                    "an outstanding write failed with " + e);
        }
    }

    @Test
    void reconnectsAfterThePeerClosedTheConnectionAndOldDescriptorsStillWork() throws Exception {
        Transport t = transport();
        Events events = new Events();
        // Healthy after 100 ms up: round 2 waits for it, so that its failure starts the count again.
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(20), Duration.ofMillis(500))
                .withHealthyAfter(Duration.ofMillis(100)), events);
        LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
        try (Rdma server = t.server().completionMode(CompletionMode.EVENT).build();
             Rdma client = t.client().build()) {
            LocalRegion exposed = server.allocate(REGION);
            java.util.concurrent.atomic.AtomicBoolean descriptorSent = new java.util.concurrent.atomic.AtomicBoolean();
            RdmaServer l = server.listen(t.nextServerAddress(), c -> {
                if (descriptorSent.compareAndSet(false, true)) {
                    c.sendRegion(exposed);   // the descriptor goes once, over the first connection only
                }
                accepted.add(c);
                c.onReceive((conn, m) -> {
                    LocalRegion reply = server.allocate(Math.max(1, m.byteCount()));
                    java.lang.foreign.MemorySegment.copy(m.data(), 0, reply.segment(), 0, m.byteCount());
                    conn.send(reply.slice(0, m.byteCount())).whenComplete((v, e) -> reply.close());
                });
            });
            Connection c = client.connect(l.address(), config);
            RemoteRegion remote = c.receiveRegion().get(T, TimeUnit.SECONDS);
            Connection first = accepted.poll(T, TimeUnit.SECONDS);
            writeAndCheck(client, c, remote, exposed, 1);

            for (int round = 1; round <= 2; round++) {
                Connection serverSide = round == 1 ? first : accepted.poll(T, TimeUnit.SECONDS);
                assertNotNull(serverSide);
                awaitHealthy(c);   // round 1: the application's own life; round 2: up 100 ms since the reconnect
                Outcomes out = postThen(client, c, remote, events, serverSide::close);
                assertEquals("failed with 0 outstanding", events.next(), "round " + round);
                assertEquals("reconnecting 1", events.next(), "round " + round + ": the count starts again");
                assertEquals("connected 1", events.next(), "round " + round);
                for (Connection named : events.named) {
                    assertSame(c, named, "the listener names the connection the application holds");
                }
                events.named.clear();
                expectEndedOnce(out);
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertNull(c.failure(), "the new life has no failure");
                // The descriptor from before: the peer kept its region, so it works on the new queue pair.
                writeAndCheck(client, c, remote, exposed, 100 + round);
                assertEquals(round - 1, c.fetchAndAdd(remote.slice(REGION - 8, 8), 1).get(T, TimeUnit.SECONDS),
                        "fetch-and-add on the new life: one add per round, none replayed");
                try (LocalRegion msg = client.allocate(16)) {
                    msg.segment().set(ValueLayout.JAVA_LONG, 0, 0xC0FFEEL + round);
                    CompletableFuture<Message> echo = c.receive();
                    c.send(msg.slice(0, 8)).get(T, TimeUnit.SECONDS);
                    try (Message m = echo.get(T, TimeUnit.SECONDS)) {
                        assertEquals(0xC0FFEEL + round, m.data().get(ValueLayout.JAVA_LONG, 0), "the echo on the new life");
                        assertSame(c, m.connection(), "a message names the connection the application holds");
                    }
                }
            }
            assertEquals(2, exposed.segment().get(ValueLayout.JAVA_LONG, REGION - 8), "the word fetch-and-add counted in");
            c.close();
            assertEquals(ConnectionState.CLOSED, c.state());
            assertNull(events.heard.poll(), "closing is not a failure: nothing more is heard");
            assertNotNull(accepted.poll(T, TimeUnit.SECONDS), "the third life's server side");
            assertEquals(0, accepted.size(), "connections accepted beyond one per life");
        }
    }

    @Test
    void aRemoteErrorIsAFailureTooAndTheConnectionComesBack() throws Exception {
        Transport t = transport();
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(10), Duration.ofMillis(100)),
                events);
        try (Rdma server = t.server().build(); Rdma client = t.client().build()) {
            LocalRegion exposed = server.allocate(REGION);
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(t.nextServerAddress(), accepted::add);
            Connection c = client.connect(l.address(), config);
            RemoteRegion good = RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor());
            RemoteRegion wrong = RemoteRegion.of(good.address(), good.length(), good.rkey() ^ 0x00ff_ff00);
            try (LocalRegion buf = client.allocate(64)) {
                // A write the peer's device refuses puts the queue pair in error (RC's rule): that is a failure.
                ExecutionException e = assertThrows(ExecutionException.class, () -> c.write(buf, wrong).get(T, TimeUnit.SECONDS));
                assertInstanceOf(dev.jrdma.exceptions.RemoteAccessException.class, e.getCause());
                assertEquals("failed", events.next());
                assertEquals("reconnecting 1", events.next());
                assertEquals("connected 1", events.next());
                c.write(buf, good.slice(0, 64)).get(T, TimeUnit.SECONDS);
                assertEquals(ConnectionState.ESTABLISHED, c.state());
            }
            assertNotNull(accepted.poll(T, TimeUnit.SECONDS));
            assertNotNull(accepted.poll(T, TimeUnit.SECONDS), "the reconnect reached the server");
            c.close();
        }
    }

    @Test
    void operationsFailAtOnceWhileDownAndItGivesUpAfterItsAttempts() throws Exception {
        Transport t = transport();
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(50), Duration.ofMillis(100))
                .withMaxAttempts(3), events);
        Rdma server = t.server().build();
        try (Rdma client = t.client().build()) {
            LocalRegion exposed = server.allocate(REGION);
            RdmaServer l = server.listen(t.nextServerAddress(), c -> c.sendRegion(exposed));
            Connection c = client.connect(l.address(), config);
            RemoteRegion remote = c.receiveRegion().get(T, TimeUnit.SECONDS);
            events.probe = client.allocate(64);
            events.probeTarget = remote.slice(0, 64);
            server.close();   // the peer is gone for good: every attempt is refused
            assertEquals("failed", events.next());
            assertEquals("reconnecting 1", events.next());
            assertEquals("reconnecting 2", events.next());
            assertEquals("reconnecting 3", events.next());
            String end = events.next();
            assertTrue(end.startsWith("gave up: "), end);
            assertEquals(ConnectionState.CONNECTING, events.triedWhileDown.poll(), "the state while reconnecting");
            Object probe = events.triedWhileDown.poll();
            assertInstanceOf(ConnectionClosedException.class, probe, "a write while reconnecting: " + probe);
            assertEquals(ConnectionState.CLOSED, c.state(), "after giving up");
            ExecutionException after = assertThrows(ExecutionException.class,
                    () -> c.write(events.probe, remote.slice(0, 64)).get(T, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionClosedException.class, after.getCause());
            c.close();
            events.probe.close();
        } finally {
            server.close();
        }
    }

    @Test
    void closingStopsTheAttempts() throws Exception {
        Transport t = transport();
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(20), Duration.ofMillis(20)), events);
        Rdma server = t.server().build();
        try (Rdma client = t.client().build()) {
            RdmaServer l = server.listen(t.nextServerAddress(), c -> { });
            Connection c = client.connect(l.address(), config);
            server.close();
            assertEquals("failed", events.next());
            assertEquals("reconnecting 1", events.next());
            assertEquals("reconnecting 2", events.next());
            c.close();
            assertEquals(ConnectionState.CLOSED, c.state());
            // An attempt that was already on its way may still be told; none after it.
            events.heard.poll(1, TimeUnit.SECONDS);
            assertNull(events.heard.poll(1, TimeUnit.SECONDS), "attempts went on after close: " + events.heard);
        } finally {
            server.close();
        }
    }

    @Test
    void reconnectsToAKilledPeerStartedAgainOnTheSameAddress() throws Exception {
        Transport t = transport();
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(50), Duration.ofMillis(500)),
                events);
        InetSocketAddress at = t.nextServerAddress();
        try (Rdma client = t.client().build()) {
            PeerProcess peer = PeerProcess.start(t, at, 64);
            Connection c;
            try {
                c = client.connect(at, config);
                readPattern(client, c, peer.region());
                Outcomes out = postThen(client, c, peer.region(), events, () -> {
                    try {
                        peer.kill();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                assertEquals("failed with 0 outstanding", events.next());
                expectEndedOnce(out);
            } finally {
                peer.close();
            }
            List<String> whileDown = new ArrayList<>();
            try (PeerProcess again = PeerProcess.start(t, at, 64)) {
                for (String e; !(e = events.next()).startsWith("connected"); ) {
                    whileDown.add(e);
                }
                assertTrue(!whileDown.isEmpty() && whileDown.getFirst().equals("reconnecting 1"), "events: " + whileDown);
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                readPattern(client, c, again.region());   // the new process's region, on the same Connection
                c.close();
            }
        }
    }

    /** Until {@code c}'s current life would start a new round if it failed (it has been up healthyAfter). */
    private static void awaitHealthy(Connection c) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!c.reconnector.currentLifeHealthy()) {
            assertTrue(System.nanoTime() < deadline, "the connection was not healthy within " + T + " s");
            Thread.sleep(5);   // polling a condition with a deadline
        }
    }

    /**
     * A server that accepts every reconnect and drops it at once (its accept callback closes it):
     * each such connection fails before it is healthy, so the attempts go on counting, and the
     * client gives up after {@code maxAttempts} of them, told why, instead of reconnecting forever
     * (without the health rule every established connection started the count again: a client
     * reconnected 950 times in 20 s).
     */
    @Test
    void aServerThatAcceptsAndDropsEveryReconnectMeetsMaxAttempts() throws Exception {
        int maxAttempts = 5;
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(2), Duration.ofMillis(10))
                .withMaxAttempts(maxAttempts), events);
        FlappingServer flapping = new FlappingServer();
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            RdmaServer l = server.listen(transport().nextServerAddress(), flapping::accepted);
            Connection c = client.connect(l.address(), config);
            long start = System.nanoTime();
            flapping.first().close();   // the first connection fails: the round starts
            List<String> heard = untilGaveUp(events, Duration.ofSeconds(10));
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            String end = heard.getLast();
            assertTrue(end.startsWith("gave up: ConnectionClosedException"), "the last event: " + heard);
            assertTrue(events.lastGaveUp.getMessage().contains("before they were healthy"), events.lastGaveUp.getMessage());
            int reconnecting = count(heard, "reconnecting ");
            assertEquals(maxAttempts, reconnecting, "attempts, each numbered on from the last: " + heard);
            for (int k = 1; k <= maxAttempts; k++) {
                assertTrue(heard.contains("reconnecting " + k), "attempt " + k + " in " + heard);
            }
            assertTrue(flapping.dropped.get() <= maxAttempts, flapping.dropped.get() + " connections accepted and dropped"
                    + " for " + maxAttempts + " attempts");
            assertTrue(tookMs < 10_000, "gave up after " + tookMs + " ms");
            assertEquals(ConnectionState.CLOSED, c.state());
            System.out.println("[reconnect] " + transport().provider() + ": a flapping server: " + flapping.dropped.get()
                    + " connections accepted and dropped, " + reconnecting + " attempts, gave up after " + tookMs + " ms");
            c.close();
        }
    }

    /** The same server against a time limit alone: no attempt starts after giveUpAfter, however many connected. */
    @Test
    void aServerThatAcceptsAndDropsEveryReconnectMeetsGiveUpAfter() throws Exception {
        Duration giveUpAfter = Duration.ofMillis(600);
        Events events = new Events();
        ConnectionConfig config = withReconnect(ReconnectPolicy.backoff(Duration.ofMillis(1), Duration.ofMillis(20))
                .withGiveUpAfter(giveUpAfter), events);
        FlappingServer flapping = new FlappingServer();
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            RdmaServer l = server.listen(transport().nextServerAddress(), flapping::accepted);
            Connection c = client.connect(l.address(), config);
            long start = System.nanoTime();
            flapping.first().close();
            List<String> heard = untilGaveUp(events, Duration.ofSeconds(10));
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(heard.getLast().startsWith("gave up: "), "the last event: " + heard);
            // The last attempt starts before giveUpAfter; its connect and drop (ms on loopback) come after.
            long bound = giveUpAfter.toMillis() + 3_000;
            assertTrue(tookMs < bound, "gave up after " + tookMs + " ms, giveUpAfter " + giveUpAfter);
            int reconnecting = count(heard, "reconnecting ");
            // Backoff 1, 2, 4, 8, 16, then 20 ms less up to 20 % jitter: at most 5 + 600 / 16 attempts fit in 600 ms.
            assertTrue(reconnecting >= 1 && reconnecting <= 43,
                    reconnecting + " attempts in " + giveUpAfter + " (backoff from 1 ms growing to 20 ms)");
            assertTrue(flapping.dropped.get() <= reconnecting, flapping.dropped.get() + " dropped for " + reconnecting
                    + " attempts");
            System.out.println("[reconnect] " + transport().provider() + ": a flapping server against giveUpAfter "
                    + giveUpAfter + ": " + flapping.dropped.get() + " connections dropped, " + reconnecting
                    + " attempts, gave up after " + tookMs + " ms");
            c.close();
        }
    }

    /** Keeps the first connection it accepts (for the test to drop) and closes every later one at once. */
    private static final class FlappingServer {
        final java.util.concurrent.CompletableFuture<Connection> first = new CompletableFuture<>();
        final java.util.concurrent.atomic.AtomicInteger dropped = new java.util.concurrent.atomic.AtomicInteger();

        void accepted(Connection c) {
            if (!first.complete(c)) {
                dropped.incrementAndGet();
                c.closeAsync();
            }
        }

        Connection first() throws Exception {
            return first.get(T, TimeUnit.SECONDS);
        }
    }

    /** The events heard until "gave up", within {@code within}. */
    private static List<String> untilGaveUp(Events events, Duration within) throws InterruptedException {
        List<String> heard = new ArrayList<>();
        long deadline = System.nanoTime() + within.toNanos();
        while (heard.isEmpty() || !heard.getLast().startsWith("gave up")) {
            long left = deadline - System.nanoTime();
            String e = left > 0 ? events.heard.poll(left, TimeUnit.NANOSECONDS) : null;
            if (e == null) {
                throw new AssertionError("no \"gave up\" within " + within + " (" + count(heard, "reconnecting ")
                        + " attempts, " + count(heard, "connected ") + " connected): the client reconnects forever; the"
                        + " last events: " + heard.subList(Math.max(0, heard.size() - 6), heard.size()));
            }
            heard.add(e);
        }
        return heard;
    }

    private static int count(List<String> heard, String prefix) {
        return (int) heard.stream().filter(e -> e.startsWith(prefix)).count();
    }

    private static void readPattern(Rdma client, Connection c, RemoteRegion region) throws Exception {
        try (LocalRegion back = client.allocate(FaultPeerMain.REGION)) {
            c.read(region, back).get(T, TimeUnit.SECONDS);
            for (int p = 0; p < FaultPeerMain.REGION; p++) {
                if (back.segment().get(ValueLayout.JAVA_BYTE, p) != FaultPeerMain.expected(p)) {
                    throw new AssertionError("byte " + p + " of the peer's region read wrong");
                }
            }
        }
    }
}
