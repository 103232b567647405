package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two honest peers moving bulk data both ways at once, writes and reads pipelined, far past the
 * per-connection answer budget: every operation completes, and neither waits on the other (a
 * review of the budgets found that a side that stopped reading its peer while its own writes
 * filled the socket could deadlock with a peer doing the same).
 */
class BidirectionalBulkTest {
    private static final int MIB = 1 << 20;
    private static final int OPS = 256;   // 256 MiB each way, both directions: 32 did not reach the deadlock 0.2-dev had

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(120)
    void bulkWritesAndReadsBothWaysAllComplete(String provider) throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().sendQueueDepth(2 * OPS).maxRdAtomic(16).build();
        try (Rdma a = Rdma.builder().provider(provider).build(); Rdma b = Rdma.builder().provider(provider).build();
             LocalRegion regionA = a.allocate(8L * MIB); LocalRegion regionB = b.allocate(8L * MIB)) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            ConnectionConfig serverConfig = config.toBuilder().privateData(regionA.toRemote().toDescriptor()).build();
            RdmaServer l = a.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), serverConfig, accepted::add);
            ConnectionConfig clientConfig = config.toBuilder().privateData(regionB.toRemote().toDescriptor()).build();
            try (Connection fromB = b.connect(l.address(), clientConfig)) {
                Connection fromA = accepted.poll(20, TimeUnit.SECONDS);
                RemoteRegion atA = RemoteRegion.fromDescriptor(fromB.peerPrivateData());
                RemoteRegion atB = RemoteRegion.fromDescriptor(fromA.peerPrivateData());
                LocalRegion srcA = a.allocate(MIB), srcB = b.allocate(MIB);
                LocalRegion dstA = a.allocate(MIB), dstB = b.allocate(MIB);
                List<CompletableFuture<Void>> all = new ArrayList<>();
                for (int i = 0; i < OPS; i++) {
                    long at = (long) (i % 8) * MIB;
                    all.add(fromA.write(srcA, atB.slice(at, MIB)));
                    all.add(fromB.write(srcB, atA.slice(at, MIB)));
                    all.add(fromA.read(atB.slice(at, MIB), dstA));
                    all.add(fromB.read(atA.slice(at, MIB), dstB));
                }
                for (CompletableFuture<Void> f : all) {
                    f.get(60, TimeUnit.SECONDS);
                }
                assertEquals(ConnectionState.ESTABLISHED, fromA.state());
                assertEquals(ConnectionState.ESTABLISHED, fromB.state());
            }
        }
    }
}
