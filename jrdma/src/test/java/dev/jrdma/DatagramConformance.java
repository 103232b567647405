package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaTimeoutException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * {@link DatagramEndpoint}: unicast both ways (the reply to a datagram's sender), many datagrams
 * of every size up to the most one carries, each whole, and what is wrong refused by name. The
 * same tests on verbs (UD in the VM), tcp and shm (UDP sockets).
 */
abstract class DatagramConformance {
    static final Duration T = Duration.ofSeconds(30);

    protected abstract Transport transport();

    static byte[] pattern(int seq, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (seq * 13 + i);
        }
        if (length >= 2) {
            b[0] = (byte) seq;
            b[1] = (byte) (seq >> 8);
        }
        return b;
    }

    static LocalRegion filled(Rdma rdma, byte[] bytes) {
        LocalRegion r = rdma.allocate(Math.max(1, bytes.length));
        r.segment().copyFrom(MemorySegment.ofArray(bytes));
        return r;
    }

    @Test
    void aDatagramAndItsReplyBetweenTwoEndpoints() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), 8);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 8);
            assertTrue(s.maxMessageSize() >= 1024, "at least a 1024-byte MTU: " + s.maxMessageSize());
            LocalRegion answer = filled(server, "pong from the server".getBytes(StandardCharsets.US_ASCII));
            AtomicReference<String> seen = new AtomicReference<>();
            s.onReceive(d -> {
                try (d) {
                    seen.set(new String(d.data().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII)
                            + " from " + d.sender().address().getAddress().getHostAddress());
                    s.send(d.sender(), answer);
                }
            });
            DatagramAddress to = c.resolve(s.localAddress()).get(T.toSeconds(), TimeUnit.SECONDS);
            assertFalse(to.isGroup());
            assertEquals(s.localAddress().getAddress(), to.address().getAddress());
            byte[] ping = "ping from the client".getBytes(StandardCharsets.US_ASCII);
            c.send(to, filled(client, ping)).get(T.toSeconds(), TimeUnit.SECONDS);
            try (Datagram back = c.receive(T)) {
                assertEquals("pong from the server",
                        new String(back.data().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII));
                assertEquals(s.localAddress().getAddress(), back.sender().address().getAddress(),
                        "the reply names the server's address");
                assertEquals(back.sender(), back.sender(), "one address per sender");
            }
            assertEquals("ping from the client from " + c.localAddress().getAddress().getHostAddress(), seen.get());
            assertEquals(1, c.sent());
            assertEquals(1, c.received());
            assertEquals(1, s.received());
        }
    }

    @Test
    void datagramsOfEverySizeUpToTheMostArriveWhole() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            int count = 64;
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), count);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 8, 16);
            int max = c.maxMessageSize();
            DatagramAddress to = c.resolve(s.localAddress()).get(T.toSeconds(), TimeUnit.SECONDS);
            LocalRegion out = client.allocate((long) max * count);
            int[] sizes = new int[count];
            for (int i = 0; i < count; i++) {
                sizes[i] = i == 0 ? 0 : i == 1 ? max : i == 2 ? 1 : 2 + (int) ((long) i * 7919 % (max - 2));
                byte[] b = pattern(i, sizes[i]);
                MemorySegment.copy(MemorySegment.ofArray(b), 0, out.segment(), (long) i * max, b.length);
                // One at a time: the receiver has a buffer for each, and UD drops what finds none.
                c.send(to, out, (long) i * max, sizes[i]).get(T.toSeconds(), TimeUnit.SECONDS);
            }
            boolean[] got = new boolean[count];
            for (int k = 0; k < count; k++) {
                try (Datagram d = s.receive(T)) {
                    byte[] b = d.data().toArray(ValueLayout.JAVA_BYTE);
                    int seq = sizes.length > 0 && b.length == 0 ? 0 : b.length == 1 ? 2 : (b[0] & 0xFF) | (b[1] & 0xFF) << 8;
                    assertTrue(seq < count && !got[seq], "datagram " + seq + " arrived once");
                    assertEquals(sizes[seq], b.length, "datagram " + seq + "'s length");
                    assertArrayEquals(pattern(seq, sizes[seq]), b, "datagram " + seq + "'s bytes");
                    got[seq] = true;
                }
            }
            assertEquals(count, s.received());
            assertEquals(0, s.receiveErrors());
        }
    }

    /**
     * The handler form of send (no future per datagram): told once of each send, with its
     * attachment, on the endpoint's IO thread; a send the endpoint refuses at once (closed) is
     * told so before the call returns, on the caller's thread.
     */
    @Test
    void aSendHandlerIsToldOnceOfEachSendWithItsAttachment() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            int count = 16;
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), count);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4, 4);
            DatagramAddress to = c.resolve(s.localAddress()).get(T.toSeconds(), TimeUnit.SECONDS);
            LocalRegion out = filled(client, pattern(7, 100));
            ConcurrentHashMap<Integer, Integer> told = new ConcurrentHashMap<>();
            LinkedBlockingQueue<Object> events = new LinkedBlockingQueue<>();
            CompletionHandler<Void, Integer> handler = new CompletionHandler<>() {
                @Override
                public void completed(Void v, Integer i) {
                    told.merge(i, 1, Integer::sum);
                    events.add(i);
                }

                @Override
                public void failed(Throwable e, Integer i) {
                    events.add(e);
                }
            };
            for (int i = 0; i < count; i++) {
                c.send(to, out, 0, 100, i, handler);
                assertEquals(i, events.poll(T.toSeconds(), TimeUnit.SECONDS), "send " + i + " told, with its attachment");
                try (Datagram d = s.receive(T)) {
                    assertEquals(100, d.length());
                }
            }
            assertEquals(count, told.size());
            assertTrue(told.values().stream().allMatch(n -> n == 1), "each told once: " + told);
            assertEquals(count, c.sent());
            assertThrows(IllegalArgumentException.class, () -> c.send(to, out, 0, 100, 0, null));
            c.close();
            Thread caller = Thread.currentThread();
            AtomicReference<Thread> on = new AtomicReference<>();
            c.send(to, out, 0, 100, 99, new CompletionHandler<Void, Integer>() {
                @Override
                public void completed(Void v, Integer i) {
                    events.add("completed " + i);
                }

                @Override
                public void failed(Throwable e, Integer i) {
                    on.set(Thread.currentThread());
                    events.add(e);
                }
            });
            assertSame(caller, on.get(), "a refused send is told at once, on the caller's thread");
            Object closed = events.poll();
            assertInstanceOf(ConnectionClosedException.class, closed);
            assertTrue(((Throwable) closed).getMessage().contains("is closed"), closed.toString());
        }
    }

    /**
     * A send handler that throws costs only its own call: every send is still told once, the
     * send slots come back (a second round fits the same depth), and the datagrams arrive.
     */
    @Test
    void aSendHandlerThatThrowsCostsOnlyItsOwnCall() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), 16);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4, 4);
            DatagramAddress to = c.resolve(s.localAddress()).get(T.toSeconds(), TimeUnit.SECONDS);
            LocalRegion out = filled(client, pattern(3, 64));
            AtomicInteger told = new AtomicInteger();
            CompletionHandler<Void, Object> throwing = new CompletionHandler<>() {
                @Override
                public void completed(Void v, Object a) {
                    told.incrementAndGet();
                    throw new IllegalStateException("the application's handler failed");
                }

                @Override
                public void failed(Throwable e, Object a) {
                    throw new AssertionError("a send failed: " + e, e);
                }
            };
            for (int round = 1; round <= 2; round++) {
                for (int i = 0; i < 4; i++) {
                    c.send(to, out, 0, 64, null, throwing);   // all four in flight at once: one poll may reap several
                }
                long deadline = System.nanoTime() + T.toNanos();
                while (told.get() < 4 * round && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertEquals(4 * round, told.get(), "round " + round + ": every send told once");
            }
            for (int i = 0; i < 8; i++) {
                try (Datagram d = s.receive(T)) {
                    assertEquals(64, d.length());
                }
            }
            assertEquals(8, c.sent());
        }
    }

    /**
     * A table of 2 senders and 4 clients: the first two are evicted by the last two, yet the
     * addresses the server kept for them still answer them (on verbs with a new address handle,
     * the evicted one destroyed), and a sender seen again is equal to its address from before.
     */
    @Test
    void anEvictedSendersAddressStillAnswersIt() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), 8, 8, 2);
            assertEquals(2, s.maxSenders());
            java.util.List<DatagramEndpoint> clients = new java.util.ArrayList<>();
            java.util.List<DatagramAddress> kept = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4);
                clients.add(c);
                c.sendSync(c.resolveSync(s.localAddress()), filled(client, new byte[] {(byte) i}));
                try (Datagram d = s.receive(T)) {
                    assertEquals(i, d.data().get(ValueLayout.JAVA_BYTE, 0));
                    kept.add(d.sender());
                }
                assertEquals(Math.min(i + 1, 2), s.senders(), "the table after " + (i + 1) + " senders");
            }
            assertEquals(2, s.sendersEvicted(), "clients 0 and 1 evicted by 2 and 3");
            for (int round = 0; round < 2; round++) {   // twice: the second finds what the first made again
                for (int i = 0; i < 4; i++) {
                    s.sendSync(kept.get(i), filled(server, new byte[] {(byte) (10 * round + i)}));
                    try (Datagram d = clients.get(i).receive(T)) {
                        assertEquals(10 * round + i, d.data().get(ValueLayout.JAVA_BYTE, 0), "round " + round
                                + ": the reply to client " + i + (i < 2 ? ", evicted before" : ""));
                    }
                }
                assertTrue(s.senders() <= 2, "the table stays at its bound: " + s.senders());
            }
            clients.getFirst().sendSync(clients.getFirst().resolveSync(s.localAddress()), filled(client, new byte[] {9}));
            try (Datagram d = s.receive(T)) {
                assertEquals(kept.getFirst(), d.sender(), "client 0 seen again: equal to its address from before");
                assertEquals(kept.getFirst().hashCode(), d.sender().hashCode());
                assertFalse(kept.get(1).equals(d.sender()), "and not equal to another client's");
            }
            assertTrue(s.senders() <= 2, "the table stays at its bound: " + s.senders());
            System.out.println("[datagram] " + transport().provider() + ": a table of 2, 4 clients answered twice each: "
                    + s.sendersEvicted() + " evictions");
        }
    }

    @Test
    void wrongUseIsRefusedByName() throws Exception {
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            DatagramEndpoint s = server.datagramEndpoint(transport().nextServerAddress(), 4);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4);
            DatagramEndpoint other = client.datagramEndpoint(transport().clientBindAddress(), 4);
            DatagramAddress to = c.resolve(s.localAddress()).get(T.toSeconds(), TimeUnit.SECONDS);
            LocalRegion big = client.allocate(c.maxMessageSize() + 1);
            IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class, () -> c.send(to, big));
            assertTrue(tooBig.getMessage().contains(String.valueOf(c.maxMessageSize())), tooBig.getMessage());
            IllegalArgumentException outside = assertThrows(IllegalArgumentException.class,
                    () -> c.send(to, big, big.length() - 4, 8));
            assertTrue(outside.getMessage().contains("outside the region"), outside.getMessage());
            IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                    () -> other.send(to, big, 0, 8));
            assertTrue(foreign.getMessage().contains("another endpoint"), foreign.getMessage());
            LocalRegion closedRegion = client.allocate(8);
            closedRegion.close();
            assertThrows(IllegalArgumentException.class, () -> c.send(to, closedRegion));
            assertThrows(IllegalArgumentException.class, () -> c.join(InetAddress.getByName("10.1.2.3")));
            assertThrows(IllegalArgumentException.class, () -> c.resolve(InetSocketAddress.createUnresolved("nowhere", 1)));
            RdmaTimeoutException none = assertThrows(RdmaTimeoutException.class, () -> s.receive(Duration.ofMillis(200)));
            assertTrue(none.getMessage().contains(s.localAddress().toString()), none.getMessage());
            assertThrows(IllegalArgumentException.class, () -> client.datagramEndpoint(transport().clientBindAddress(), 0));
            assertThrows(IllegalArgumentException.class, () -> client.datagramEndpoint(transport().clientBindAddress(), 1, 0));
            assertEquals(DatagramEndpoint.DEFAULT_MAX_SENDERS, c.maxSenders());
            assertEquals(4096, c.maxSenders(), "the documented default");
            for (int bad : new int[] {0, -1, DatagramEndpoint.MAX_SENDERS_LIMIT + 1}) {
                IllegalArgumentException b = assertThrows(IllegalArgumentException.class,
                        () -> client.datagramEndpoint(transport().clientBindAddress(), 1, 1, bad));
                assertTrue(b.getMessage().contains("maxSenders") && b.getMessage().contains(String.valueOf(bad)), b.getMessage());
            }

            // A datagram the receiver holds stays readable; once closed it is not.
            c.send(to, filled(client, new byte[] {7, 7, 7})).get(T.toSeconds(), TimeUnit.SECONDS);
            Datagram d = s.receive(T);
            assertEquals(3, d.length());
            d.close();
            assertThrows(IllegalStateException.class, d::data);

            c.close();
            CompletionException closed = assertThrows(CompletionException.class,
                    () -> c.send(to, filled(client, new byte[] {1})).join());
            assertInstanceOf(ConnectionClosedException.class, closed.getCause());
            assertThrows(ConnectionClosedException.class, () -> c.receive(Duration.ofMillis(10)));
            c.close();   // idempotent
        }
    }

    @Test
    void closingTheEndpointEndsAWaitingReceiveAndItsRdmaClosesTheRest() throws Exception {
        Rdma client = transport().client().build();
        try {
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4);
            client.datagramEndpoint(transport().clientBindAddress(), 4);   // left for the Rdma's close
            CountDownLatch waiting = new CountDownLatch(1);
            AtomicReference<Throwable> ended = new AtomicReference<>();
            Thread t = Thread.ofPlatform().start(() -> {
                waiting.countDown();
                try {
                    c.receive(T);
                } catch (Throwable e) {
                    ended.set(e);
                }
            });
            assertTrue(waiting.await(T.toSeconds(), TimeUnit.SECONDS));
            while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING && t.isAlive()) {
                Thread.onSpinWait();   // until it waits in receive
            }
            c.close();
            t.join(T.toMillis());
            assertFalse(t.isAlive(), "the waiting receive ended");
            assertInstanceOf(ConnectionClosedException.class, ended.get(), String.valueOf(ended.get()));
        } finally {
            client.close();
        }
    }

    @Test
    void aHandlerMayCloseItsEndpointButNotBlockOnIt() throws Exception {
        DatagramEndpoint s;
        try (Rdma server = transport().server().build(); Rdma client = transport().client().build()) {
            s = server.datagramEndpoint(transport().nextServerAddress(), 4);
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 4);
            AtomicReference<Throwable> refused = new AtomicReference<>();
            AtomicReference<DatagramAddress> sender = new AtomicReference<>();
            CountDownLatch closed = new CountDownLatch(1);
            DatagramEndpoint self = s;
            self.onReceive(d -> {
                try {
                    self.resolveSync(c.localAddress());
                } catch (IllegalStateException e) {
                    refused.set(e);
                }
                sender.set(d.sender());
                d.close();
                self.close();   // from its own IO thread: torn down after this callback returns
                closed.countDown();
            });
            c.sendSync(c.resolveSync(s.localAddress()), filled(client, new byte[] {1}));
            assertTrue(closed.await(T.toSeconds(), TimeUnit.SECONDS), "the handler ran and closed its endpoint");
            assertTrue(refused.get() != null && refused.get().getMessage().contains("IO thread"), String.valueOf(refused.get()));
            CompletionException after = assertThrows(CompletionException.class,
                    () -> s.send(sender.get(), filled(server, new byte[] {2})).join());
            assertInstanceOf(ConnectionClosedException.class, after.getCause());
        }
        // After the Rdma's close has stopped its IO threads: every poll of the endpoint has ended.
        assertEquals(0, s.pollFailures(), "polls that threw: the teardown pulled the queue pair from under its own poll");
    }

    /** The bytes of {@code d}'s payload as text. */
    static String text(Datagram d) {
        return new String(d.data().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
    }
}
