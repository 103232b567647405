package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * RNR is flow control: receive depth {1, 2, 64} x bursts from the depth to depth + 1000 x a
 * consumer taking {0, 10, 100} ms a message (the longest bursts only with the shorter delays, to
 * bound the run). Everything is delivered, in order, and nothing fails while each waiting SEND
 * gets a receive within the RNR budget; past the budget, exactly RNR_RETRY_EXC_ERR. Never a
 * protocol error.
 */
class RnrMatrixTest {
    private static final long T = 60;

    @ParameterizedTest(name = "{0}: depth {1}, burst {2}, consumer {3} ms")
    @CsvSource({
        "tcp, 1, 1, 0", "tcp, 1, 1001, 0", "tcp, 1, 101, 10", "tcp, 1, 11, 100",
        "tcp, 2, 2, 0", "tcp, 2, 1002, 0", "tcp, 2, 102, 10", "tcp, 2, 12, 100",
        "tcp, 64, 64, 0", "tcp, 64, 1064, 0", "tcp, 64, 164, 10", "tcp, 64, 74, 100",
        "shm, 1, 1001, 0", "shm, 2, 102, 10", "shm, 64, 74, 100"})
    void everyBurstIsDeliveredInOrderWhileEachSendGetsAReceiveInTime(String provider, int depth, int burst, int delayMs)
            throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(depth).receiveBufferSize(64)
                .sendQueueDepth(2048).build();
        try (Rdma server = Rdma.builder().provider(provider).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::add);
            try (Connection c = client.connect(l.address(), config); LocalRegion msgs = client.allocate(8L * burst)) {
                Connection s = accepted.poll(T, TimeUnit.SECONDS);
                List<CompletableFuture<Void>> sent = new ArrayList<>();
                for (int i = 0; i < burst; i++) {
                    msgs.segment().set(ValueLayout.JAVA_INT_UNALIGNED, 8L * i, i);
                    sent.add(c.send(msgs.slice(8L * i, 8)));
                }
                for (int i = 0; i < burst; i++) {
                    try (Message m = s.receive().get(T, TimeUnit.SECONDS)) {
                        assertEquals(i, m.data().get(ValueLayout.JAVA_INT_UNALIGNED, 0), "message " + i + " in order");
                    }
                    if (delayMs > 0) {
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(delayMs));   // the consumer's work
                    }
                }
                for (CompletableFuture<Void> f : sent) {
                    f.get(T, TimeUnit.SECONDS);
                }
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertEquals(ConnectionState.ESTABLISHED, s.state());
            }
        }
    }

    /** A consumer slower than the budget ((0 + 1) x 100 ms): the waiting SEND fails with exactly RNR_RETRY_EXC_ERR. */
    @Test
    void pastTheBudgetTheWaitingSendFailsWithRnrRetryExceeded() throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(1).receiveBufferSize(64).rnrRetry(0).build();
        try (Rdma server = Rdma.builder().provider("tcp").build(); Rdma client = Rdma.builder().provider("tcp").build()) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::add);
            try (Connection c = client.connect(l.address(), config); LocalRegion msg = client.allocate(8)) {
                accepted.poll(T, TimeUnit.SECONDS);
                c.sendSync(msg);   // takes the only receive; nobody takes the message
                CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                        () -> c.send(msg).orTimeout(T, TimeUnit.SECONDS).join());
                String why = String.valueOf(e.getCause().getMessage());
                assertTrue(why.contains("RNR_RETRY_EXC_ERR"), why);
                assertFalse(why.contains("protocol"), why);
                assertEquals(ConnectionState.ERROR, c.state(), "RC: the failed SEND puts the sender in error");
            }
        }
    }
}
