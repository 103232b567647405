package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.runtime.CompletionMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

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
}
