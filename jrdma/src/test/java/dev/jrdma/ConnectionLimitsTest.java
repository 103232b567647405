package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionRejectedException;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A server holds at most {@code maxConnections}; the next client is rejected with the reason, and the limits are checked. */
class ConnectionLimitsTest {
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aClientPastMaxConnectionsIsRejectedWithTheReason(String provider) {
        try (Rdma server = Rdma.builder().provider(provider).maxConnections(2).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            Connection a = client.connect(l.address());
            Connection b = client.connect(l.address());
            RuntimeException e = assertThrows(RuntimeException.class, () -> client.connect(l.address()));
            Throwable cause = e instanceof ConnectionRejectedException ? e : e.getCause();
            assertInstanceOf(ConnectionRejectedException.class, cause, String.valueOf(e));
            assertTrue(cause.getMessage().contains("too many connections"), cause.getMessage());
            a.close();
            // A place is free again once a connection is gone (its release is asynchronous on the server).
            Connection c = null;
            for (long end = System.nanoTime() + 10_000_000_000L; c == null; ) {
                try {
                    c = client.connect(l.address());
                } catch (RuntimeException again) {
                    if (System.nanoTime() > end) {
                        throw again;
                    }
                    Thread.onSpinWait();
                }
            }
            b.close();
            c.close();
        }
    }

    @Test
    void limitsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().maxConnections(0));
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().maxPendingHandshakes(0));
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().maxConnectionsPerSource(0));
        assertThrows(IllegalArgumentException.class, () -> Rdma.builder().handshakeTimeout(Duration.ZERO));
    }
}
