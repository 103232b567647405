package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 45, finding 3: a peer that finished its handshake and then sits silent held a place of
 * {@code maxConnections} for good. Now an established connection whose peer sends nothing at
 * all, not even a keep-alive, for {@code Rdma.Builder.idleTimeout} ends; jrdma peers with
 * nothing to say send keep-alives, so their idle connections stay up, also while only
 * one-sided operations that bypass the socket (shm's direct writes) go on.
 */
class IdleTimeoutTest {
    private static final Duration SHORT = Duration.ofMillis(600);

    @Test
    @Timeout(60)
    void aSilentPeerIsClosedAfterTheIdleTimeoutAndItsPlaceIsFree() throws Exception {
        try (Rdma server = Rdma.builder().provider("tcp").idleTimeout(SHORT).maxConnections(1).build();
             Rdma off = Rdma.builder().provider("tcp").idleTimeout(Duration.ZERO).build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            RdmaServer lOff = off.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            try (RawPeer silent = RawPeer.connect(l.address());
                 RawPeer silentToo = RawPeer.connect(lOff.address())) {
                long t0 = System.nanoTime();
                assertTrue(endsWithin(silent, 10_000), "the silent peer's connection ended (EOF or reset)");
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(ms >= SHORT.toMillis() * 8 / 10, "not before the idle timeout: after " + ms + " ms");
                // Turned off, the same silence ends nothing (looked at after the other one ended).
                assertTrue(!endsWithin(silentToo, 0), "with idleTimeout(ZERO) a silent peer stays");
                // The one place (maxConnections 1) is free again.
                try (Rdma client = Rdma.builder().provider("tcp").build()) {
                    Connection c = null;
                    for (long end = System.nanoTime() + 10_000_000_000L; c == null; ) {
                        try {
                            c = client.connect(l.address());
                        } catch (dev.jrdma.exceptions.RdmaException refused) {
                            assertTrue(System.nanoTime() < end, "the freed place was not taken again: " + refused);
                        }
                    }
                    assertEquals(ConnectionState.ESTABLISHED, c.state());
                    c.close();
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void idleJrdmaConnectionsStayUpThroughKeepAlives(String provider) throws Exception {
        CompletableFuture<Connection> accepted = new CompletableFuture<>();
        try (Rdma server = Rdma.builder().provider(provider).idleTimeout(SHORT).build();
             Rdma client = Rdma.builder().provider(provider).idleTimeout(SHORT).build();
             LocalRegion target = server.allocate(64);
             LocalRegion buf = client.allocate(8)) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), accepted::complete);
            Connection c = client.connect(l.address());
            Connection s = accepted.get(10, TimeUnit.SECONDS);
            // Idle both ways for several timeouts: keep-alives (every 200 ms from each end) keep it up.
            awaitKeepAlives(3 * 2 * 3);
            assertEquals(ConnectionState.ESTABLISHED, c.state());
            assertEquals(ConnectionState.ESTABLISHED, s.state());
            // Only one-sided writes from the client (on shm: direct, never on the server's socket
            // or ring) for several more timeouts: the server hears the client's keep-alives.
            s.sendRegion(target).get(10, TimeUnit.SECONDS);
            RemoteRegion remote = c.receiveRegion().get(10, TimeUnit.SECONDS);
            // For three idle timeouts (a workload bounded in time): on shm the server's socket and
            // ring carry nothing of it, so the client's keep-alives are what it hears.
            long keepAlives = TcpQueuePair.KEEP_ALIVES.get();
            long n = 0;
            for (long end = System.nanoTime() + 3 * SHORT.toNanos(); System.nanoTime() < end; ) {
                buf.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, ++n);
                c.writeSync(buf, remote.slice(0, 8));
            }
            if (provider.equals("shm")) {
                assertTrue(TcpQueuePair.KEEP_ALIVES.get() - keepAlives >= 3, "keep-alives during direct writes: "
                        + (TcpQueuePair.KEEP_ALIVES.get() - keepAlives));
            }
            assertEquals(n, target.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
            assertEquals(ConnectionState.ESTABLISHED, c.state());
            assertEquals(ConnectionState.ESTABLISHED, s.state());
            c.sendSync(buf);   // and it still works
        }
    }

    @Test
    void theIdleTimeoutIsZeroOrPositive() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Rdma.builder().idleTimeout(Duration.ofSeconds(-1)));
        assertTrue(e.getMessage().contains("idleTimeout must be zero (none) or positive"), e.getMessage());
        assertEquals(TimeUnit.SECONDS.toNanos(15), TcpQueuePair.keepAliveInterval(TimeUnit.MINUTES.toNanos(2)));
        assertEquals(TimeUnit.MILLISECONDS.toNanos(200), TcpQueuePair.keepAliveInterval(TimeUnit.MILLISECONDS.toNanos(600)));
    }

    /** Waits (up to 30 s) until this process has sent {@code n} more keep-alives. */
    private static void awaitKeepAlives(long n) {
        long until = TcpQueuePair.KEEP_ALIVES.get() + n;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (TcpQueuePair.KEEP_ALIVES.get() < until) {
            assertTrue(System.nanoTime() < deadline, "keep-alives: " + TcpQueuePair.KEEP_ALIVES.get() + " of " + until);
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
    }

    /** Whether {@code p}'s connection ends (EOF or reset) within {@code millis} (0: already ended). */
    private static boolean endsWithin(RawPeer p, long millis) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        do {
            try {
                int n = p.channel.read(one);
                if (n < 0) {
                    return true;
                }
                one.clear();   // a byte from the server (none is expected from an idle one): go on
            } catch (IOException reset) {
                return true;
            }
            if (millis > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        } while (System.nanoTime() < deadline);
        return false;
    }
}
