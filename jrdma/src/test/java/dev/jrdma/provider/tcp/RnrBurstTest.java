package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * RNR is flow control between honest peers: a burst of sends larger than the receiver's queue,
 * against a consumer slower than the sender, is delivered whole and in order while the RNR
 * budget lasts; it is never a protocol error. (0.1 failed this with a burst of five: the
 * requests parked behind the first waiting SEND were not counted as received, and the next
 * one "arrived out of order".)
 */
class RnrBurstTest {
    private static final long T = 20;

    @ParameterizedTest(name = "{0}: receive depth {1}, burst of {2}")
    @CsvSource({"tcp, 1, 8", "tcp, 2, 12", "shm, 1, 8", "shm, 2, 12"})
    void aBurstAgainstASlowConsumerIsDeliveredInOrder(String provider, int depth, int burst) throws Exception {
        ConnectionConfig small = ConnectionConfig.builder().receiveQueueDepth(depth).receiveBufferSize(64).build();
        try (Rdma server = Rdma.builder().provider(provider).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), small, accepted::add);
            try (Connection c = client.connect(l.address(), small)) {
                Connection s = accepted.poll(T, TimeUnit.SECONDS);
                List<CompletableFuture<Void>> sent = new ArrayList<>();
                List<LocalRegion> msgs = new ArrayList<>();
                for (int i = 0; i < burst; i++) {
                    LocalRegion m = client.allocate(16);
                    m.segment().fill((byte) (i + 1));
                    msgs.add(m);
                    sent.add(c.send(m));
                }
                // The consumer takes 10 ms a message: the burst waits for receive buffers
                // (burst x 10 ms stays well inside the default RNR budget).
                for (int i = 0; i < burst; i++) {
                    try (Message m = s.receive().get(T, TimeUnit.SECONDS)) {
                        assertEquals(16, m.byteCount(), "message " + i);
                        assertEquals((byte) (i + 1), m.data().get(ValueLayout.JAVA_BYTE, 0), "message " + i + " in order");
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                    }
                }
                for (CompletableFuture<Void> f : sent) {
                    f.get(T, TimeUnit.SECONDS);
                }
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertEquals(ConnectionState.ESTABLISHED, s.state());
                msgs.forEach(LocalRegion::close);
            }
        }
    }
}
