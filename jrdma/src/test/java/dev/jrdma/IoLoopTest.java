package dev.jrdma;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Rdma.Builder.ioLoops}: an Rdma without IO threads whose loops the application's threads
 * drive (what jrdma-netty's event loops do). Each connection is served by one loop, and its
 * completions and callbacks run on that loop's driver and nowhere else, whoever posts; blocking
 * calls of other threads wait for the driver; once the drivers stop, close works from any thread.
 */
class IoLoopTest {
    private static final long T = 30;

    /** One platform thread per loop: bind, then poll and sleep until closed, then unbind. */
    static final class Drivers implements AutoCloseable {
        private final Rdma rdma;
        private final Thread[] threads;
        private volatile boolean running = true;

        Drivers(Rdma rdma, String name) {
            this.rdma = rdma;
            this.threads = new Thread[rdma.ioLoopCount()];
            CompletableFuture<?>[] bound = new CompletableFuture<?>[threads.length];
            for (int i = 0; i < threads.length; i++) {
                IoLoop loop = rdma.ioLoop(i);
                CompletableFuture<Void> b = new CompletableFuture<>();
                bound[i] = b;
                threads[i] = Thread.ofPlatform().name(name + "-loop-" + i).start(() -> {
                    loop.bind();
                    b.complete(null);
                    try {
                        while (running) {
                            if (loop.poll() == 0) {
                                loop.awaitWork(TimeUnit.MILLISECONDS.toNanos(100), () -> !running);
                            }
                        }
                    } finally {
                        loop.unbind();
                    }
                });
            }
            CompletableFuture.allOf(bound).join();
        }

        Thread thread(int loop) {
            return threads[loop];
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            for (int i = 0; i < threads.length; i++) {
                rdma.ioLoop(i).wakeup();
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(T));
                assertTrue(!t.isAlive(), t.getName() + " stopped");
            }
        }
    }

    private static Rdma.Builder builder(String provider) {
        return Rdma.builder().provider(provider).completionMode(CompletionMode.EVENT);
    }

    private static InetSocketAddress address(String provider) {
        return (provider.equals("tcp") ? Transport.tcp() : Transport.shm()).nextServerAddress();
    }

    /** A server that echoes each message with imm = its length. */
    private static RdmaServer echo(Rdma server, InetSocketAddress at, LinkedBlockingQueue<Connection> accepted) {
        return server.listen(at, c -> {
            accepted.add(c);
            c.onReceive((conn, msg) -> {
                LocalRegion reply = server.allocate(Math.max(1, msg.byteCount()));
                java.lang.foreign.MemorySegment.copy(msg.data(), 0, reply.segment(), 0, msg.byteCount());
                conn.sendWithImm(msg.byteCount(), reply.slice(0, msg.byteCount())).whenComplete((v, e) -> reply.close());
            });
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aConnectionOnALoopRunsItsCallbacksOnThatLoopsDriverWhoeverPosts(String provider) throws Exception {
        try (Rdma server = builder(provider).build(); Rdma client = builder(provider).ioLoops(2).build()) {
            RdmaServer l = echo(server, address(provider), new LinkedBlockingQueue<>());
            try (Drivers drivers = new Drivers(client, "client"); LocalRegion buf = client.allocate(64)) {
                for (int loop : new int[] {1, 0}) {
                    Connection c = client.connectAsync(l.address(), ConnectionConfig.defaults(), client.ioLoop(loop))
                            .get(T, TimeUnit.SECONDS);
                    assertEquals(loop, c.ioIndex());
                    assertTrue(c.localAddress() != null && c.localAddress().getPort() > 0, "local address " + c.localAddress());
                    LinkedBlockingQueue<Thread> receivedOn = new LinkedBlockingQueue<>();
                    LinkedBlockingQueue<Integer> imms = new LinkedBlockingQueue<>();
                    c.onReceive((conn, msg) -> {
                        receivedOn.add(Thread.currentThread());
                        imms.add(msg.imm().orElse(-1));
                    });
                    buf.segment().set(ValueLayout.JAVA_LONG, 0, 42L + loop);
                    // Posted from this thread: its handler runs on the driver.
                    CompletableFuture<Thread> completedOn = new CompletableFuture<>();
                    c.send(buf.slice(0, 8), completedOn, new java.nio.channels.CompletionHandler<Void, CompletableFuture<Thread>>() {
                        @Override
                        public void completed(Void v, CompletableFuture<Thread> on) {
                            on.complete(Thread.currentThread());
                        }

                        @Override
                        public void failed(Throwable e, CompletableFuture<Thread> on) {
                            on.completeExceptionally(e);
                        }
                    });
                    assertSame(drivers.thread(loop), completedOn.get(T, TimeUnit.SECONDS));
                    assertEquals(8, imms.poll(T, TimeUnit.SECONDS));
                    assertSame(drivers.thread(loop), receivedOn.take());
                    // Blocking, from this thread: it waits for the driver, which does the work.
                    c.sendSync(buf.slice(0, 5));
                    assertEquals(5, imms.poll(T, TimeUnit.SECONDS));
                    assertSame(drivers.thread(loop), receivedOn.take());
                    assertTrue(!client.isIoThread(), "this thread is no IO thread of the client");
                    c.close();
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void acceptedConnectionsAreSpreadOverTheLoopsAndEachIsServedByItsDriver(String provider) throws Exception {
        try (Rdma server = builder(provider).ioLoops(2).build(); Rdma client = builder(provider).build();
             Drivers drivers = new Drivers(server, "server")) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            Map<Connection, Thread> servedOn = new ConcurrentHashMap<>();
            Map<Connection, Thread> acceptedOn = new ConcurrentHashMap<>();
            RdmaServer l = server.listen(address(provider), c -> {
                acceptedOn.put(c, Thread.currentThread());
                c.onReceive((conn, msg) -> {
                    servedOn.put(conn, Thread.currentThread());
                    accepted.add(conn);
                });
            });
            List<Connection> clients = new ArrayList<>();
            try (LocalRegion buf = client.allocate(8)) {
                for (int i = 0; i < 4; i++) {
                    Connection c = client.connect(l.address());
                    clients.add(c);
                    c.sendSync(buf);
                }
                Set<Integer> loops = new HashSet<>();
                for (int i = 0; i < 4; i++) {
                    Connection c = accepted.poll(T, TimeUnit.SECONDS);
                    loops.add(c.ioIndex());
                    assertSame(drivers.thread(c.ioIndex()), servedOn.get(c), "served on its own loop's driver");
                    assertSame(drivers.thread(c.ioIndex()), acceptedOn.get(c), "accepted on its own loop's driver too");
                }
                assertEquals(Set.of(0, 1), loops, "accepted connections go to both loops");
            } finally {
                clients.forEach(Connection::close);
            }
        }
    }

    @Test
    void onlyTheDriverPollsAndBadUseIsRefusedByName() throws Exception {
        try (Rdma rdma = builder("tcp").ioLoops(2).build(); Rdma other = builder("tcp").ioLoops(1).build()) {
            try (Drivers drivers = new Drivers(rdma, "named")) {
                IllegalStateException polled = assertThrows(IllegalStateException.class, () -> rdma.ioLoop(1).poll());
                assertTrue(polled.getMessage().contains("\"named-loop-1\""), polled.getMessage());
                assertThrows(IllegalStateException.class, () -> rdma.ioLoop(0).bind());
                assertThrows(IllegalStateException.class, () -> rdma.ioLoop(0).awaitWork(1, () -> false));
                IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                        () -> rdma.connectAsync(new InetSocketAddress("127.0.0.1", 1), ConnectionConfig.defaults(), other.ioLoop(0)));
                assertTrue(foreign.getMessage().contains("another Rdma"), foreign.getMessage());
                assertThrows(NullPointerException.class,
                        () -> rdma.connectAsync(new InetSocketAddress("127.0.0.1", 1), ConnectionConfig.defaults(), null));
                IllegalStateException driven = assertThrows(IllegalStateException.class, rdma::close);
                assertTrue(driven.getMessage().contains("still driven by thread \"named-loop-"), driven.getMessage());
            }
            assertThrows(IndexOutOfBoundsException.class, () -> rdma.ioLoop(2));
            assertEquals(2, rdma.ioLoopCount());
        }
        try (Rdma threads = builder("tcp").build()) {
            IllegalStateException none = assertThrows(IllegalStateException.class, () -> threads.ioLoop(0));
            assertTrue(none.getMessage().contains("no IO loops"), none.getMessage());
            assertEquals(0, threads.ioLoopCount());
        }
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().ioLoops(0));
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().ioLoops(257));
        IllegalArgumentException single = assertThrows(IllegalArgumentException.class,
                () -> builder("tcp").ioThreads(Rdma.INLINE).singleThreaded(true).ioLoops(1).build());
        assertTrue(single.getMessage().contains("singleThreaded"), single.getMessage());
        IllegalArgumentException pinned = assertThrows(IllegalArgumentException.class,
                () -> builder("tcp").ioLoops(1).cpuAffinity(0).build());
        assertTrue(pinned.getMessage().contains("cpuAffinity"), pinned.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void onceTheDriversStopCloseWorksFromAnyThreadAndLeavesNoFdOrThread(String provider) throws Exception {
        long fdsBefore = openFds();
        try (Rdma server = builder(provider).build()) {
            RdmaServer l = echo(server, address(provider), new LinkedBlockingQueue<>());
            Set<Thread> threadsBefore = Thread.getAllStackTraces().keySet();
            Rdma client = builder(provider).ioLoops(2).build();
            Connection c;
            try (Drivers drivers = new Drivers(client, "closing")) {
                c = client.connectAsync(l.address(), ConnectionConfig.defaults(), client.ioLoop(1)).get(T, TimeUnit.SECONDS);
                try (LocalRegion buf = client.allocate(8)) {
                    c.sendSync(buf);
                }
            }
            // Nobody drives the loops now: close (of the connection, then of the Rdma) drives them itself.
            CompletableFuture<Void> closed = CompletableFuture.runAsync(client::close);
            closed.get(T, TimeUnit.SECONDS);
            assertEquals(ConnectionState.CLOSED, c.state());
            assertTrue(Stream.of(Thread.getAllStackTraces().keySet().toArray(Thread[]::new))
                    .noneMatch(t -> !threadsBefore.contains(t) && t.getName().startsWith("jrdma-io")),
                    "a driven Rdma starts no IO thread");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (openFds() > fdsBefore && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(fdsBefore, openFds(), "descriptors after both Rdmas closed, against before");
    }

    private static long openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
