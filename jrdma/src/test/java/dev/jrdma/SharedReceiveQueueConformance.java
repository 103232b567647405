package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * Shared receive queues ({@link SharedReceiveQueue}): many connections of one server receive in
 * one pool of buffers; the low-water callback fires when held messages leave too few posted and
 * is armed again; buffers come back whatever happens to the connection; and what is wrong with a
 * config or a call is refused by name. The same tests on verbs (ibv_srq, in the VM), tcp and shm.
 */
abstract class SharedReceiveQueueConformance {
    private static final long T = 60;   // seconds, for every wait
    private static final int BUFFER = 512;

    protected abstract Transport transport();

    /** Connections of the fan-in test: the 256 where connecting is cheap (tcp, shm). */
    protected abstract int fanInConnections();

    static byte[] message(int conn, int seq, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (conn * 31 + seq * 7 + i);
        }
        b[0] = (byte) conn;
        b[1] = (byte) (conn >> 8);
        b[2] = (byte) seq;
        return b;
    }

    @Test
    void manyConnectionsReceiveInOnePoolOfBuffers() throws Exception {
        int connections = fanInConnections();
        int buffers = 512;
        int perConnection = 4;
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(buffers, BUFFER);
            ConnectionConfig config = ConnectionConfig.builder().sharedReceiveQueue(srq).build();
            int[] next = new int[connections];
            AtomicReference<String> wrong = new AtomicReference<>();
            CountDownLatch all = new CountDownLatch(connections * perConnection);
            InetSocketAddress at = transport().nextServerAddress();
            try (RdmaServer s = server.listen(at, config, c -> c.onReceive((conn, m) -> {
                byte[] got = m.data().toArray(ValueLayout.JAVA_BYTE);
                int from = (got[0] & 0xFF) | (got[1] & 0xFF) << 8;
                int seq = got[2];
                synchronized (next) {
                    if (from >= connections || seq != next[from]
                            || !java.util.Arrays.equals(got, message(from, seq, got.length))) {
                        wrong.compareAndSet(null, "connection " + from + " message " + seq + " (expected " +
                                (from < connections ? next[from] : -1) + ", " + got.length + " bytes)");
                    } else {
                        next[from]++;
                    }
                }
                all.countDown();
            }))) {
                // Connected 32 at a time, within the listener's backlog (128), each given a minute: on
                // verbs in the emulated VM, 256 connects at once ran past the default 10 s.
                ConnectionConfig small = ConnectionConfig.builder().receiveQueueDepth(2).sendQueueDepth(8)
                        .timeout(java.time.Duration.ofSeconds(T)).build();
                List<Connection> conns = new ArrayList<>();
                for (int wave = 0; wave < connections; wave += 32) {
                    List<CompletableFuture<Connection>> connecting = new ArrayList<>();
                    for (int i = wave; i < Math.min(connections, wave + 32); i++) {
                        connecting.add(client.connectAsync(s.address(), small));
                    }
                    for (CompletableFuture<Connection> f : connecting) {
                        conns.add(f.get(T, TimeUnit.SECONDS));
                    }
                }
                assertEquals(BUFFER, conns.get(0).peerReceiveBufferSize(), "the peer is told the shared buffer size");
                List<CompletableFuture<Void>> sent = new ArrayList<>();
                List<LocalRegion> regions = new ArrayList<>();
                for (int seq = 0; seq < perConnection; seq++) {
                    for (int i = 0; i < connections; i++) {
                        byte[] data = message(i, seq, 100 + (i * 13 + seq * 101) % (BUFFER - 100));
                        LocalRegion r = client.allocate(data.length);
                        r.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
                        regions.add(r);
                        sent.add(conns.get(i).send(r));
                    }
                }
                for (CompletableFuture<Void> f : sent) {
                    f.get(T, TimeUnit.SECONDS);
                }
                assertTrue(all.await(T, TimeUnit.SECONDS), "received " + (connections * perConnection - all.getCount())
                        + " of " + connections * perConnection);
                assertEquals(null, wrong.get(), "every message whole, in its connection's order");
                assertEquals(connections, srq.connections());
                awaitPosted(srq, buffers);
                long privateBytes = (long) connections * ConnectionConfig.defaults().receiveQueueDepth()
                        * BUFFER;
                assertEquals((long) buffers * BUFFER, srq.memoryBytes());
                System.out.printf("[srq] %s: %d connections received %d messages in one pool of %d x %d B = %d KiB;"
                                + " %d private queues of the default depth %d would register %d KiB (%.0fx)%n",
                        transport().provider(), connections, connections * perConnection, buffers, BUFFER,
                        srq.memoryBytes() / 1024, connections, ConnectionConfig.defaults().receiveQueueDepth(),
                        privateBytes / 1024, (double) privateBytes / srq.memoryBytes());
                for (Connection c : conns) {
                    c.close();
                }
                regions.forEach(LocalRegion::close);
            }
            awaitConnections(srq, 0);
            srq.close();
        }
    }

    @Test
    void lowWaterCallbackFiresWhenHeldMessagesLeaveTooFewPostedAndIsArmedAgain() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(8, BUFFER, 12);
            // (What posted() says inside the callback depends on whether the server's IO thread has
            // polled the receive that crossed the limit yet: the device's event comes first.)
            List<CompletableFuture<Integer>> calls = List.of(new CompletableFuture<>(), new CompletableFuture<>());
            AtomicInteger call = new AtomicInteger();
            srq.onLowWater(4, q -> {
                int n = call.getAndIncrement();
                if (n == 0) {
                    q.addBuffers(4);   // the first time it also refills: 4 more, up to the capacity of 12
                }
                if (n < calls.size()) {
                    calls.get(n).complete(q.buffers());
                }
            });
            try (Pair p = pairWith(server, client, srq)) {
                Connection c = p.conn();
                Connection served = p.served();
                LocalRegion buf = client.allocate(64);
                List<Message> held = new ArrayList<>();
                for (int i = 0; i < 4; i++) {   // 8 - 4 = 4 posted: not fewer than 4
                    c.send(buf).get(T, TimeUnit.SECONDS);
                    held.add(served.receive().get(T, TimeUnit.SECONDS));
                }
                assertEquals(4, srq.posted());
                assertEquals(0, srq.lowWaterEvents(), "4 posted is not below a limit of 4");
                c.send(buf).get(T, TimeUnit.SECONDS);   // 3 posted: below
                held.add(served.receive().get(T, TimeUnit.SECONDS));
                assertEquals(12, calls.get(0).get(T, TimeUnit.SECONDS), "the callback added 4 buffers");
                assertEquals(1, srq.lowWaterEvents());
                assertEquals(3 + 4, srq.posted(), "the 3 left and the 4 added");
                // Armed again after the callback: holding 4 more leaves 3 of the 7 posted, below 4 again.
                for (int i = 0; i < 4; i++) {
                    c.send(buf).get(T, TimeUnit.SECONDS);
                    held.add(served.receive().get(T, TimeUnit.SECONDS));
                }
                assertEquals(12, calls.get(1).get(T, TimeUnit.SECONDS));
                assertEquals(3, srq.posted());
                assertEquals(2, srq.lowWaterEvents());
                held.forEach(Message::close);
                awaitPosted(srq, 12);
                srq.onLowWater(0, null);
                buf.close();
            }
            awaitConnections(srq, 0);
            srq.close();
        }
    }

    @Test
    void buffersComeBackWhenThePeerGoesAndMessagesStayReadableUntilClosed() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(6, BUFFER);
            Message kept;
            byte[] data = message(3, 1, 300);
            Connection served;
            try (Pair p = pairWith(server, client, srq)) {
                served = p.served();
                LocalRegion buf = client.allocate(300);
                buf.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
                p.conn().send(buf).get(T, TimeUnit.SECONDS);
                kept = served.receive().get(T, TimeUnit.SECONDS);
                assertEquals(5, srq.posted());
                p.conn().close();   // the peer goes while a message of its is held
                buf.close();
            }
            ExecutionException e = assertThrows(ExecutionException.class, () -> served.receive().get(T, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionClosedException.class, e.getCause());
            awaitConnections(srq, 0);
            assertEquals(5, srq.posted(), "the connection's end took no buffer of the pool with it");
            assertEquals(java.util.Arrays.toString(data), java.util.Arrays.toString(kept.data().toArray(ValueLayout.JAVA_BYTE)),
                    "a held message outlives its connection");
            kept.close();
            assertEquals(6, srq.posted(), "closing it gave its buffer back to the pool");
            srq.close();
        }
    }

    @Test
    void aMessageLargerThanTheSharedBuffersIsRefusedBeforeItIsSent() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(4, 256);
            try (Pair p = pairWith(server, client, srq); LocalRegion big = client.allocate(257)) {
                assertEquals(256, p.conn().peerReceiveBufferSize());
                ExecutionException e = assertThrows(ExecutionException.class, () -> p.conn().send(big).get(T, TimeUnit.SECONDS));
                assertInstanceOf(IllegalArgumentException.class, e.getCause());
                assertTrue(e.getCause().getMessage().contains("257 bytes exceeds the peer's receive buffer of 256"),
                        e.getCause().getMessage());
                p.conn().send(big.slice(0, 256)).get(T, TimeUnit.SECONDS);   // the connection is fine: one that fits goes
                try (Message m = p.served().receive().get(T, TimeUnit.SECONDS)) {
                    assertEquals(256, m.byteCount());
                    assertEquals(3, srq.posted());
                }
                assertEquals(4, srq.posted());
            }
        }
    }

    @Test
    void wrongUseIsRefusedByName() throws Exception {
        try (Rdma server = transport().server().build(); Rdma other = transport().server().build()) {
            assertThrows(IllegalArgumentException.class, () -> server.sharedReceiveQueue(0, 64));
            assertThrows(IllegalArgumentException.class, () -> server.sharedReceiveQueue(8, 0));
            IllegalArgumentException cap = assertThrows(IllegalArgumentException.class, () -> server.sharedReceiveQueue(8, 64, 4));
            assertTrue(cap.getMessage().contains("capacity 4"), cap.getMessage());
            SharedReceiveQueue srq = server.sharedReceiveQueue(4, 64, 6);
            IllegalArgumentException grow = assertThrows(IllegalArgumentException.class, () -> srq.addBuffers(3));
            assertTrue(grow.getMessage().contains("capacity 6"), grow.getMessage());
            assertThrows(IllegalArgumentException.class, () -> srq.onLowWater(7, q -> { }));
            assertThrows(IllegalArgumentException.class, () -> srq.onLowWater(2, null));
            if (srq.enforcesFairShare()) {
                IllegalArgumentException share = assertThrows(IllegalArgumentException.class, () -> srq.fairShare(0, 1));
                assertTrue(share.getMessage().contains("a fair share of 0 buffers per connection"), share.getMessage());
                assertThrows(IllegalArgumentException.class, () -> srq.fairShare(1, 7));
            }
            ConnectionConfig config = ConnectionConfig.builder().sharedReceiveQueue(srq).build();
            InetSocketAddress at = transport().nextServerAddress();
            IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                    () -> other.listen(at, config, c -> { }));
            assertTrue(foreign.getMessage().contains("another Rdma"), foreign.getMessage());
            assertThrows(IllegalArgumentException.class, () -> other.connect(at, config));
            try (Pair p = pairWith(server, other, srq)) {
                IllegalStateException busy = assertThrows(IllegalStateException.class, srq::close);
                assertTrue(busy.getMessage().contains("1 connection"), busy.getMessage());
            }
            awaitConnections(srq, 0);
            srq.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class,
                    () -> server.listen(transport().nextServerAddress(), config, c -> { }));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            assertThrows(IllegalStateException.class, () -> srq.addBuffers(1));
            srq.close();   // idempotent
        }
    }

    /**
     * One connection whose receiver never reads its messages shares the pool with one that reads
     * each as it comes: the hoarder takes the pool down to the reserve and its next message waits
     * (RNR), while every one of the honest connection's sends completes. Before the fair share the
     * hoarder took every buffer and 0 of 6 honest sends got through (RNR_RETRY_EXC_ERR). On verbs
     * the NIC hands the buffers out, and the pool says it cannot hold a connection back.
     */
    @Test
    void aConnectionThatNeverReadsItsMessagesDoesNotStarveAnother() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(8, BUFFER);
            if (!srq.enforcesFairShare()) {
                UnsupportedCapabilityException e = assertThrows(UnsupportedCapabilityException.class,
                        () -> srq.fairShare(1, 2));
                assertTrue(e.getMessage().contains("first come, first served"), e.getMessage());
                srq.close();
                return;
            }
            assertEquals(1, srq.fairShare(), "by default a connection at 1 buffer takes none of the reserve");
            assertEquals(1, srq.reserve(), "by default an eighth of the 8 buffers");
            srq.fairShare(1, 2);
            try (Pair greedy = pairWith(server, client, srq); Pair honest = pairWith(server, client, srq);
                 LocalRegion buf = client.allocate(64)) {
                List<CompletableFuture<Void>> hoarded = new ArrayList<>();
                for (int i = 0; i < 8; i++) {   // as many as the pool has: none is read
                    hoarded.add(greedy.conn().send(buf));
                }
                for (int i = 0; i < 6; i++) {
                    hoarded.get(i).get(T, TimeUnit.SECONDS);
                }
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(T); srq.posted() > 2 && System.nanoTime() < end; ) {
                    Thread.sleep(1);   // the hoarder's messages landing: the pool at its reserve, or below
                }
                int sent = 0;
                Throwable failed = null;
                for (int i = 0; i < 12 && failed == null; i++) {
                    try {
                        honest.conn().send(buf).get(T, TimeUnit.SECONDS);
                        honest.served().receive().get(T, TimeUnit.SECONDS).close();
                        sent++;
                    } catch (ExecutionException e) {
                        failed = e.getCause();
                    }
                }
                assertEquals(12, sent, "honest sends completed while the other connection hoarded; then: " + failed);
                for (int i = 6; i < 8; i++) {
                    CompletableFuture<Void> held = hoarded.get(i);
                    if (held.isDone()) {
                        // The hoarder's own sends fail at their RNR retries, never the honest one's.
                        ExecutionException e = assertThrows(ExecutionException.class, held::get);
                        assertTrue(String.valueOf(e.getCause().getMessage()).contains("RNR_RETRY_EXC_ERR"),
                                String.valueOf(e.getCause()));
                    }
                }
                assertTrue(srq.posted() >= 2, "the hoarder never took the reserve: " + srq);
                System.out.printf("[srq] %s: a hoarder held %d of 8 buffers; 12 of 12 honest sends completed%n",
                        transport().provider(), 8 - srq.posted());
                // The hoarder's messages outlive its connection until they are read and closed.
                greedy.conn().close();
                int drained = 0;
                for (; drained <= 8; drained++) {
                    try {
                        greedy.served().receive().get(T, TimeUnit.SECONDS).close();
                    } catch (ExecutionException closed) {
                        assertInstanceOf(ConnectionClosedException.class, closed.getCause());
                        break;
                    }
                }
                assertTrue(drained >= 6 && drained <= 8, drained + " messages of the hoarder's were kept for it");
            }
            awaitConnections(srq, 0);
            awaitPosted(srq, 8);
            srq.close();
        }
    }

    /** A listener whose connections receive in {@code srq}, a client connection to it and its server end. */
    private record Pair(RdmaServer listener, Connection conn, Connection served) implements AutoCloseable {
        @Override
        public void close() {
            conn.close();
            listener.close();
        }
    }

    private Pair pairWith(Rdma server, Rdma client, SharedReceiveQueue srq) throws Exception {
        CompletableFuture<Connection> accepted = new CompletableFuture<>();
        RdmaServer l = server.listen(transport().nextServerAddress(), ConnectionConfig.builder().sharedReceiveQueue(srq).build(),
                accepted::complete);
        try {
            Connection c = client.connect(l.address());
            return new Pair(l, c, accepted.get(T, TimeUnit.SECONDS));
        } catch (Exception | Error e) {
            l.close();
            throw e;
        }
    }

    private static void awaitPosted(SharedReceiveQueue srq, int posted) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (srq.posted() != posted && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            Thread.sleep(1);
        }
        assertEquals(posted, srq.posted(), "buffers posted: " + srq);
    }

    private static void awaitConnections(SharedReceiveQueue srq, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (srq.connections() != n && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertEquals(n, srq.connections(), "connections using " + srq);
    }
}
