package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.CompletionMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * shm between two Rdma of this host: the connection's frames go through the shared rings (both
 * sides start in ring mode; tcp never does), in every completion mode, with messages larger
 * than a ring so that the producer waits for room and is woken by the consumer's doorbell.
 */
class ShmRingTest {
    @ParameterizedTest
    @EnumSource(CompletionMode.class)
    void messagesGoThroughTheRingsInEveryCompletionMode(CompletionMode mode) throws Exception {
        long before = TcpQueuePair.RING_CONNECTIONS.get();
        int size = 3 << 20;   // 3 MiB: more than a 1 MiB ring holds
        dev.jrdma.ConnectionConfig config = dev.jrdma.ConnectionConfig.builder().receiveBufferSize(size)
                .receiveQueueDepth(4).build();
        try (Rdma server = Rdma.builder().provider("shm").completionMode(mode).build();
             Rdma client = Rdma.builder().provider("shm").completionMode(mode).build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, c ->
                    c.onReceive((conn, m) -> {
                        LocalRegion echo = server.allocate(m.byteCount());
                        MemorySegment.copy(m.data(), 0, echo.segment(), 0, m.byteCount());
                        conn.send(echo).whenComplete((v, e) -> echo.close());
                    }));
            try (Connection c = client.connect(l.address(), config)) {
                // The server's side starts when it reads READY_TO_USE, which may be just after connect returns.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (TcpQueuePair.RING_CONNECTIONS.get() < before + 2 && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
                assertEquals(before + 2, TcpQueuePair.RING_CONNECTIONS.get(), "both sides in ring mode");
                byte[] data = new byte[size];
                new Random(5).nextBytes(data);
                LocalRegion out = client.allocate(size);
                out.segment().copyFrom(MemorySegment.ofArray(data));
                for (int i = 0; i < 5; i++) {
                    CompletableFuture<Message> reply = c.receive();
                    c.sendSync(i % 2 == 0 ? out : out.slice(0, 100 + i));
                    try (Message m = reply.get(20, TimeUnit.SECONDS)) {
                        int n = i % 2 == 0 ? size : 100 + i;
                        assertEquals(n, m.byteCount());
                        byte[] want = java.util.Arrays.copyOf(data, n);
                        assertArrayEquals(want, m.data().toArray(ValueLayout.JAVA_BYTE), "echo " + i);
                    }
                }
            }
        }
        try (Rdma a = Rdma.builder().provider("tcp").build(); Rdma b = Rdma.builder().provider("tcp").build()) {
            long mark = TcpQueuePair.RING_CONNECTIONS.get();
            RdmaServer l = a.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            try (Connection c = b.connect(l.address())) {
                assertEquals(mark, TcpQueuePair.RING_CONNECTIONS.get(), "tcp never uses rings");
            }
        }
    }

    /**
     * Many connections from one Rdma at once: each server proves itself on the client's one
     * rendezvous socket before answering, so when each ACCEPT arrives its channel is there, even
     * with hundreds queued (a drain of 64 at a time left most of 200 on tcp).
     */
    @Test
    @Timeout(120)
    void twoHundredConcurrentConnectionsAllUseTheRings() throws Exception {
        int n = 200;
        long before = TcpQueuePair.RING_CONNECTIONS.get();
        dev.jrdma.ConnectionConfig config = dev.jrdma.ConnectionConfig.builder().receiveQueueDepth(2)
                .receiveBufferSize(256).sendQueueDepth(2).build();
        try (Rdma server = Rdma.builder().provider("shm").build();
             Rdma client = Rdma.builder().provider("shm").build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, c -> { });
            List<CompletableFuture<Connection>> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                all.add(client.connectAsync(l.address(), config));
            }
            List<Connection> connections = new ArrayList<>();
            for (CompletableFuture<Connection> f : all) {
                connections.add(f.get(60, TimeUnit.SECONDS));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (TcpQueuePair.RING_CONNECTIONS.get() < before + 2L * n && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(before + 2L * n, TcpQueuePair.RING_CONNECTIONS.get(), "every connection, both sides, on the rings");
            connections.forEach(Connection::close);
        }
    }

    /**
     * Descriptors come back: the rendezvous socket, each connection's channel and rings, and every
     * memfd handed over for a region (a write maps the target's region) are closed with their
     * connections and Rdmas; the process has as many open as before.
     */
    @Test
    @Timeout(60)
    void connectionsAndMappedRegionsLeaveNoDescriptorBehind() throws Exception {
        connectWriteAndClose(1);   // warm: the JDK keeps /dev/random and /dev/urandom open once a SecureRandom is used
        long baseline = openFds();
        connectWriteAndClose(20);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (openFds() > baseline && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(baseline, openFds(), "descriptors open after the Rdmas closed, against before: " + fdTargets());
    }

    private static void connectWriteAndClose(int connections) throws Exception {
        try (Rdma server = Rdma.builder().provider("shm").build();
             Rdma client = Rdma.builder().provider("shm").build();
             LocalRegion exposed = server.allocate(1 << 16);
             LocalRegion from = client.allocate(64)) {
            dev.jrdma.ConnectionConfig config = dev.jrdma.ConnectionConfig.builder()
                    .privateData(exposed.toRemote().toDescriptor()).build();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, c -> { });
            for (int i = 0; i < connections; i++) {
                try (Connection c = client.connect(l.address())) {
                    dev.jrdma.RemoteRegion target = dev.jrdma.RemoteRegion.fromDescriptor(c.peerPrivateData());
                    from.segment().fill((byte) i);
                    c.writeSync(from, target.slice(64L * i, 64));   // the first maps the region
                    c.writeSync(from, target.slice(64L * i, 64));   // this one goes direct
                    assertEquals((byte) i, exposed.segment().get(ValueLayout.JAVA_BYTE, 64L * i + 63));
                }
            }
        }
    }

    private static List<String> fdTargets() throws java.io.IOException {
        List<String> out = new ArrayList<>();
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            for (var fd : fds.toList()) {
                try {
                    out.add(fd.getFileName() + "->" + java.nio.file.Files.readSymbolicLink(fd));
                } catch (java.io.IOException gone) {
                    // the listing's own
                }
            }
        }
        return out;
    }

    private static long openFds() throws java.io.IOException {
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count() - 1;   // not the listing's own
        }
    }

    /**
     * An idle process's rendezvous does not fill up with offers nobody asked for: the client's
     * connection manager watches it and drains it (closing what brings no nonce of ours), so
     * three times its backlog of unasked offers all get in, and a later connection of the
     * client's still uses the rings. Without the watch, the kernel's queue is full after 4096 and
     * connects fail until the client's next HELLO.
     */
    @Test
    @Timeout(120)
    void unaskedOffersDoNotFillAnIdleClientsRendezvous() throws Exception {
        java.util.Set<String> before = rendezvousNames();
        try (Rdma server = Rdma.builder().provider("shm").completionMode(CompletionMode.EVENT).build();
             Rdma client = Rdma.builder().provider("shm").completionMode(CompletionMode.EVENT).build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            client.connect(l.address()).close();   // opens the client's rendezvous
            java.util.Set<String> names = rendezvousNames();
            names.removeAll(before);
            assertEquals(1, names.size(), "the client's rendezvous: " + names);
            byte[] name = names.iterator().next().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            int offers = 3 * 4096 + 100;
            try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment record = a.allocate(40, 8);
                record.set(ValueLayout.JAVA_LONG, 0, SameHostChannel.RING_OFFER);
                for (int i = 0; i < offers; i++) {
                    int fd = -1;
                    for (long until = System.nanoTime() + 2_000_000_000L; fd < 0 && System.nanoTime() < until; ) {
                        fd = dev.jrdma.os.UnixSockets.connect(name);   // EAGAIN while the queue is full
                        if (fd < 0) {
                            Thread.onSpinWait();
                        }
                    }
                    assertTrue(fd >= 0, "offer " + i + ": the rendezvous's queue stayed full for 2 s");
                    record.set(ValueLayout.JAVA_LONG, 8, i + 1L);
                    dev.jrdma.os.UnixSockets.send(fd, record, -1);
                    dev.jrdma.os.Sockets.close(fd);
                }
            }
            long rings = TcpQueuePair.RING_CONNECTIONS.get();
            try (Connection c = client.connect(l.address())) {
                assertEquals(dev.jrdma.ConnectionState.ESTABLISHED, c.state());
            }
            assertTrue(TcpQueuePair.RING_CONNECTIONS.get() >= rings + 2, "both sides of a new connection use the rings");
        }
    }

    /** The abstract sockets named jrdma-shm.* on this host (from /proc/net/unix). */
    private static java.util.Set<String> rendezvousNames() throws java.io.IOException {
        java.util.Set<String> names = new java.util.HashSet<>();
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/net/unix"))) {
            int at = line.indexOf("@jrdma-shm.");
            if (at >= 0) {
                names.add(line.substring(at + 1).trim());
            }
        }
        return names;
    }
}
