package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 45, finding 3 (its limit per source): one client could fill {@code maxConnections}. Now a
 * server holds at most {@code maxConnectionsPerSource} from one address; the next is rejected
 * with the reason, another address still connects, and a place freed is taken again.
 */
class PerSourceConnectionLimitTest {
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void oneSourceCannotTakeEveryConnection(String provider) throws Exception {
        try (Rdma server = Rdma.builder().provider(provider).maxConnections(16).maxConnectionsPerSource(3).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            InetAddress greedy = InetAddress.getByName("127.0.0.2");
            List<RawPeer> held = new ArrayList<>();
            String[] refusal = new String[1];
            try {
                for (int i = 0; i < 3; i++) {
                    RawPeer p = RawPeer.connectFrom(l.address(), greedy, refusal);
                    assertNotNull(p, "connection " + i + " of 3 allowed from one address: " + refusal[0]);
                    held.add(p);
                }
                assertNull(RawPeer.connectFrom(l.address(), greedy, refusal), "a fourth from the same address");
                assertTrue(refusal[0].contains("too many connections from this address: the server takes 3"), refusal[0]);
                try (Connection other = client.connect(l.address())) {   // from 127.0.0.1: another source
                    assertEquals(ConnectionState.ESTABLISHED, other.state());
                }
                held.remove(0).close();
                // The place comes back once the server saw that connection end (asynchronously).
                RawPeer again = null;
                for (long end = System.nanoTime() + 10_000_000_000L; again == null && System.nanoTime() < end; ) {
                    again = RawPeer.connectFrom(l.address(), greedy, refusal);
                }
                assertNotNull(again, "a place freed is taken again: " + refusal[0]);
                held.add(again);
            } finally {
                for (RawPeer p : held) {
                    p.close();
                }
            }
        }
    }
}
