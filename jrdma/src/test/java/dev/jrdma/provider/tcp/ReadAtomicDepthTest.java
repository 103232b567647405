package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.ValueLayout;
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
 * READs and atomics in flight are bounded as max_rd_atomic bounds a verbs requester: by the
 * smaller of our initiator depth and the responder resources the peer announced, and the peer
 * ends a connection that goes past what it granted. Here the server grants 2 and parks everything
 * behind a SEND that waits for a receive; the client (which would allow itself 128) posts 64 READs
 * and 64 fetch-and-adds behind it: it keeps 2 in flight and holds the rest, in order, so the
 * server never sees more than it granted, and all complete with the right values once the
 * receive comes.
 */
class ReadAtomicDepthTest {
    private static final long T = 20;

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void aRequesterKeepsNoMoreReadsAndAtomicsInFlightThanThePeerGranted(String provider) throws Exception {
        try (Rdma server = Rdma.builder().provider(provider).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            // The region lives in the server; made there so that the server's Rdma owns it.
            LocalRegion target = server.allocate(4096);
            for (int i = 0; i < 64; i++) {
                target.segment().set(ValueLayout.JAVA_LONG, 8L * i, 1000L + i);
            }
            ConnectionConfig serverConfig = ConnectionConfig.builder().maxRdAtomic(2).receiveQueueDepth(1)
                    .receiveBufferSize(64).privateData(target.toRemote().toDescriptor()).build();
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), serverConfig,
                    accepted::add);
            ConnectionConfig clientConfig = ConnectionConfig.builder().sendQueueDepth(256).build();   // room for all 129
            try (Connection c = client.connect(l.address(), clientConfig)) {
                Connection s = accepted.poll(T, TimeUnit.SECONDS);
                RemoteRegion remote = RemoteRegion.fromDescriptor(c.peerPrivateData());
                LocalRegion one = client.allocate(16);
                c.send(one).get(T, TimeUnit.SECONDS);
                Message first = s.receive().get(T, TimeUnit.SECONDS);   // held: the receive is not posted again
                CompletableFuture<Void> second = c.send(one);            // waits for a receive there
                List<CompletableFuture<Void>> reads = new ArrayList<>();
                List<CompletableFuture<Long>> adds = new ArrayList<>();
                List<LocalRegion> into = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    LocalRegion r = client.allocate(8);
                    into.add(r);
                    reads.add(c.read(remote.slice(8L * i, 8), r));
                    adds.add(c.fetchAndAdd(remote.slice(8L * 63 + 8, 8), 1));
                }
                first.close();   // the receive comes back: the SEND lands, and what waited behind it is answered
                try (Message m = s.receive().get(T, TimeUnit.SECONDS)) {
                    assertEquals(16, m.byteCount());
                }
                second.get(T, TimeUnit.SECONDS);
                for (int i = 0; i < 64; i++) {
                    reads.get(i).get(T, TimeUnit.SECONDS);
                    assertEquals(1000L + i, into.get(i).segment().get(ValueLayout.JAVA_LONG, 0), "read " + i);
                    assertEquals((long) i, adds.get(i).get(T, TimeUnit.SECONDS), "fetch-and-add " + i + " in order");
                }
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertEquals(ConnectionState.ESTABLISHED, s.state());
                into.forEach(LocalRegion::close);
                one.close();
            } finally {
                target.close();
            }
        }
    }
}
