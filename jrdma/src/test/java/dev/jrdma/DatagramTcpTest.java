package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.UnsupportedCapabilityException;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * {@link DatagramConformance} on tcp (UDP sockets), and what only a plain UDP peer shows: it can
 * talk to an endpoint both ways, a datagram larger than the endpoint's buffers is dropped without
 * harm, and a group cannot be joined on an interface without multicast.
 */
class DatagramTcpTest extends DatagramConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }

    @Test
    void aPlainUdpPeerIsAnsweredAndItsOversizedDatagramIsDropped() throws Exception {
        try (Rdma rdma = transport().server().build(); DatagramSocket peer = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().nextServerAddress(), 4);
            peer.setSoTimeout((int) T.toMillis());
            byte[] tooBig = new byte[e.maxMessageSize() + 1];
            peer.send(new DatagramPacket(tooBig, tooBig.length, e.localAddress()));
            byte[] hello = "hello from a UDP socket".getBytes(StandardCharsets.US_ASCII);
            peer.send(new DatagramPacket(hello, hello.length, e.localAddress()));
            try (Datagram d = e.receive(T)) {
                assertArrayEquals(hello, d.data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                        "the oversized datagram before it was dropped, this one arrived");
                assertEquals(new InetSocketAddress(InetAddress.getLoopbackAddress(), peer.getLocalPort()), d.sender().address());
                byte[] reply = "and back".getBytes(StandardCharsets.US_ASCII);
                e.send(d.sender(), filled(rdma, reply)).get(T.toSeconds(), TimeUnit.SECONDS);
                DatagramPacket p = new DatagramPacket(new byte[64], 64);
                peer.receive(p);
                assertEquals("and back", new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII));
            }
            assertEquals(1, e.received());
        }
    }

    /**
     * A plain UDP socket floods an endpoint of 4 buffers whose handler holds every datagram it
     * gets: what finds no buffer is dropped (the socket's buffer, then the kernel), nothing grows,
     * and once the held datagrams are closed the endpoint receives again.
     */
    @Test
    void aFloodCostsOnlyWhatFindsNoBufferAndTheEndpointGoesOn() throws Exception {
        try (Rdma rdma = transport().server().build(); DatagramSocket flooder = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().nextServerAddress(), 4);
            java.util.concurrent.LinkedBlockingQueue<Datagram> held = new java.util.concurrent.LinkedBlockingQueue<>();
            e.onReceive(held::add);
            byte[] junk = new byte[1024];
            for (int i = 0; i < 20_000; i++) {
                flooder.send(new DatagramPacket(junk, junk.length, e.localAddress()));
            }
            java.util.List<Datagram> first = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Datagram d = held.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertTrue(d != null, "buffer " + i + " filled");
                first.add(d);
            }
            assertEquals(null, held.poll(200, TimeUnit.MILLISECONDS), "no fifth datagram without a fifth buffer");
            assertEquals(4, e.received());
            // The held ones go back; what the socket buffered arrives, then a marked one after it.
            e.onReceive(null);
            first.forEach(Datagram::close);
            byte[] last = "after the flood".getBytes(StandardCharsets.US_ASCII);
            flooder.send(new DatagramPacket(last, last.length, e.localAddress()));
            boolean seen = false;
            for (int i = 0; i < 20_001 && !seen; i++) {
                try (Datagram d = e.receive(T)) {
                    seen = d.length() == last.length;
                }
            }
            assertTrue(seen, "the marked datagram arrived after what the socket had buffered");
            assertTrue(e.received() < 20_001, "the kernel dropped what found no room: " + e.received() + " received");
            System.out.println("[datagram] flood of 20000: " + e.received() + " received, the rest dropped by the kernel");
        }
    }

    /**
     * Issue 45: plain UDP sockets send one byte each from 5000 distinct source ports to an endpoint
     * whose handler asks each datagram's sender (as a server that answers does), with a table of
     * 1024 senders: every {@code sender()} works, the table stays at 1024 (the least recently seen
     * evicted, counted), the evicted senders' peers are freed (collected: nothing else holds them),
     * and then a new sender is received and answered. Before, the table never forgot a sender: past
     * its 4096th, {@code sender()} threw for every new one for the endpoint's life.
     */
    @Test
    void aFloodOfSendersFromDistinctPortsNeverLocksOutANewSender() throws Exception {
        int bound = 1024;
        int want = 5000;
        InetAddress loopback = InetAddress.getLoopbackAddress();
        try (Rdma rdma = transport().server().build()) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().nextServerAddress(), 64, 64, bound);
            assertEquals(bound, e.maxSenders());
            byte[] ask = "who answers a newcomer?".getBytes(StandardCharsets.US_ASCII);
            LocalRegion answer = filled(rdma, "you are answered".getBytes(StandardCharsets.US_ASCII));
            java.util.Set<Integer> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
            java.util.List<java.lang.ref.WeakReference<Object>> peers = java.util.Collections.synchronizedList(
                    new java.util.ArrayList<>());
            java.util.concurrent.atomic.AtomicInteger refused = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger handled = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicReference<Throwable> firstRefusal = new java.util.concurrent.atomic.AtomicReference<>();
            e.onReceive(d -> {
                try (d) {
                    DatagramAddress from = d.sender();
                    if (d.length() == ask.length) {
                        e.send(from, answer);
                    } else if (seen.add(from.address().getPort())) {
                        peers.add(new java.lang.ref.WeakReference<>(from.peer));
                    }
                } catch (RuntimeException x) {
                    refused.incrementAndGet();
                    firstRefusal.compareAndSet(null, x);
                } finally {
                    handled.incrementAndGet();
                }
            });
            java.util.Set<Integer> used = new java.util.HashSet<>();
            java.nio.ByteBuffer one = java.nio.ByteBuffer.allocate(1);
            long start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(20);
            int opened = 0;
            // Bounded in sockets and time; at most 128 datagrams waiting at once, so that the kernel drops none.
            while (seen.size() < want && opened < 3 * want && System.nanoTime() < deadline) {
                try (java.nio.channels.DatagramChannel ch = java.nio.channels.DatagramChannel.open()) {
                    ch.bind(new InetSocketAddress(loopback, 0));
                    opened++;
                    if (!used.add(((InetSocketAddress) ch.getLocalAddress()).getPort())) {
                        continue;   // a port used before: distinct ones only
                    }
                    ch.send(one.clear(), e.localAddress());
                }
                long pace = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
                while (used.size() - e.received() > 128 && System.nanoTime() < pace) {
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000);
                }
            }
            long floodMs = (System.nanoTime() - start) / 1_000_000;
            long quiet = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (handled.get() < used.size() && System.nanoTime() < quiet) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);   // the last ones still in the handler
            }
            int senders = seen.size();
            assertEquals(0, refused.get(), "sender() failed for " + refused.get() + " datagrams: " + firstRefusal.get());
            assertTrue(senders >= want, senders + " distinct senders reached the endpoint (of " + used.size() + " sent)");
            assertEquals(bound, e.senders(), "the table after " + senders + " senders");
            assertEquals(senders - bound, e.sendersEvicted(), "each sender past the bound evicted one");

            // The evicted senders' peers are held by nothing now: they go (memory stays bounded).
            long gcDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            long alive;
            do {
                System.gc();
                alive = peers.stream().filter(w -> w.get() != null).count();
            } while (alive > bound + 64 && System.nanoTime() < gcDeadline);
            assertTrue(alive <= bound + 64, alive + " of " + senders + " senders' peers still reachable; the table keeps "
                    + bound + " (and the 64 buffers' last datagrams may name some)");

            try (DatagramSocket newcomer = newSender(loopback, used)) {
                newcomer.setSoTimeout((int) T.toMillis());
                newcomer.send(new DatagramPacket(ask, ask.length, e.localAddress()));
                DatagramPacket p = new DatagramPacket(new byte[64], 64);
                newcomer.receive(p);
                assertEquals("you are answered", new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII));
            }
            assertEquals(0, refused.get(), "the newcomer's sender(): " + firstRefusal.get());
            assertEquals(bound, e.senders(), "the newcomer took the place of the least recently seen");
            assertEquals(senders - bound + 1, e.sendersEvicted());
            System.out.println("[datagram] " + senders + " senders from distinct ports in " + floodMs + " ms (" + opened
                    + " sockets opened): table " + e.senders() + " of " + bound + ", " + e.sendersEvicted()
                    + " evicted, " + alive + " peers still reachable after GC, the newcomer answered");
        }
    }

    /**
     * A socket on a port none of the flood's senders had: an ephemeral port comes round again, and
     * a newcomer on a port still in the table would be an old sender, not a new one (seen: one
     * eviction short).
     */
    private static DatagramSocket newSender(InetAddress loopback, java.util.Set<Integer> used) throws java.io.IOException {
        for (int i = 0; i < 1000; i++) {
            DatagramSocket s = new DatagramSocket(0, loopback);
            if (!used.contains(s.getLocalPort())) {
                return s;
            }
            s.close();
        }
        throw new AssertionError("no port outside the flood's " + used.size() + " in 1000 tries");
    }

    /** Endpoints opened and closed, with a resolve each, leave no file descriptor behind. */
    @Test
    void closedEndpointsLeaveNoFileDescriptors() throws Exception {
        try (Rdma rdma = transport().server().build()) {
            DatagramEndpoint warm = rdma.datagramEndpoint(transport().clientBindAddress(), 2);
            warm.close();
            long before = openFds();
            for (int i = 0; i < 20; i++) {
                DatagramEndpoint a = rdma.datagramEndpoint(transport().clientBindAddress(), 2);
                DatagramEndpoint b = rdma.datagramEndpoint(transport().clientBindAddress(), 2);
                a.sendSync(a.resolveSync(b.localAddress()), filled(rdma, new byte[] {1}));
                b.receive(T).close();
                a.close();
                b.close();
            }
            assertEquals(before, openFds(), "file descriptors after 40 endpoints came and went");
        }
    }

    private static long openFds() throws Exception {
        try (var s = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    @Test
    void joiningOnAnInterfaceWithoutMulticastIsRefusedByName() throws Exception {
        NetworkInterface lo = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
        org.junit.jupiter.api.Assumptions.assumeFalse(lo.supportsMulticast(),
                "lo has the MULTICAST flag on this machine: joining there is allowed");
        try (Rdma rdma = transport().server().build()) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().clientBindAddress(), 4);
            ExecutionException x = assertThrows(ExecutionException.class,
                    () -> e.join(InetAddress.getByName("239.77.0.1")).get(T.toSeconds(), TimeUnit.SECONDS));
            assertTrue(x.getCause() instanceof UnsupportedCapabilityException, String.valueOf(x.getCause()));
            assertTrue(x.getCause().getMessage().contains("MULTICAST") && x.getCause().getMessage().contains(lo.getName()),
                    x.getCause().getMessage());
        }
    }

    /**
     * A group of three on 127.0.0.1-3 in a network namespace this test makes, whose {@code lo}
     * has the MULTICAST flag (a child JVM: a namespace is per process). Needs root, as CI has.
     */
    @Test
    void aGroupOfThreeOnALoopbackWithMulticastInItsOwnNetworkNamespace() throws Exception {
        boolean root = "root".equals(System.getProperty("user.name"));
        if (!root && "true".equals(System.getenv("CI"))) {
            org.junit.jupiter.api.Assertions.fail("CI runs the tests as root: this one makes a network namespace");
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(root, "needs root to make a network namespace (CI runs it as root)");
        String ns = "jrdma-mcast";
        run(false, "ip", "netns", "del", ns);
        try {
            run(true, "ip", "netns", "add", ns);
            run(true, "ip", "-n", ns, "link", "set", "lo", "up");
            run(true, "ip", "-n", ns, "link", "set", "lo", "multicast", "on");
            String java = ProcessHandle.current().info().command().orElseThrow();
            Process child = new ProcessBuilder("ip", "netns", "exec", ns, java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    VerbsTestAddresses.childClassPath(), DatagramMulticastMain.class.getName()).redirectErrorStream(true).start();
            String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), "the child ended: " + out);
            System.out.print(out);
            assertEquals(0, child.exitValue(), out);
            assertTrue(out.contains("ok"), out);
        } finally {
            run(false, "ip", "netns", "del", ns);
        }
    }

    private static void run(boolean must, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), String.join(" ", cmd) + " ended");
        if (must) {
            assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
        }
    }
}
