package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A SEND that finds every receive buffer taken (RNR) waits, in order, without holding up the
 * other direction: the side that holds its messages can still read from the peer, and the
 * waiting SEND is delivered, not dropped or failed, once a message is closed.
 */
class ParkedSendTest {
    private static final long T = 20;

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aSendWaitingForAReceiveDoesNotHoldUpTheOtherDirection(String provider) throws Exception {
        ConnectionConfig two = ConnectionConfig.builder().receiveQueueDepth(2).receiveBufferSize(64).build();
        try (Rdma server = Rdma.builder().provider(provider).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), two, accepted::add);
            LocalRegion exposed = client.allocate(256);
            for (int i = 0; i < 256; i++) {
                exposed.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3));
            }
            ConnectionConfig withRegion = two.toBuilder().privateData(exposed.toRemote().toDescriptor()).build();
            try (Connection c = client.connect(l.address(), withRegion)) {
                Connection s = accepted.poll(T, TimeUnit.SECONDS);
                LocalRegion[] msgs = new LocalRegion[3];
                CompletableFuture<?>[] sent = new CompletableFuture<?>[3];
                for (int i = 0; i < 3; i++) {
                    msgs[i] = client.allocate(16);
                    msgs[i].segment().fill((byte) (i + 1));
                    sent[i] = c.send(msgs[i]);
                }
                // The server holds both of its receive buffers: the third SEND has none.
                Message m1 = s.receive().get(T, TimeUnit.SECONDS);
                Message m2 = s.receive().get(T, TimeUnit.SECONDS);
                CompletableFuture<Message> third = s.receive();
                // Its own read of the client's memory is answered meanwhile.
                LocalRegion into = server.allocate(256);
                s.readSync(RemoteRegion.fromDescriptor(s.peerPrivateData()), into);
                assertArrayEquals(exposed.segment().toArray(ValueLayout.JAVA_BYTE), into.segment().toArray(ValueLayout.JAVA_BYTE));
                assertFalse(third.isDone(), "the third message waits for a receive buffer");
                assertFalse(sent[2].isDone(), "and its SEND is not acknowledged before it is received");
                // A buffer comes back: the waiting SEND is delivered, in order, and succeeds.
                assertEquals(1, m1.data().get(ValueLayout.JAVA_BYTE, 0));
                assertEquals(2, m2.data().get(ValueLayout.JAVA_BYTE, 0));
                m1.close();
                try (Message m3 = third.get(T, TimeUnit.SECONDS)) {
                    assertEquals(16, m3.byteCount());
                    assertEquals(-1, m3.data().mismatch(msgs[2].segment()));
                }
                m2.close();
                for (CompletableFuture<?> f : sent) {
                    f.get(T, TimeUnit.SECONDS);
                }
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertEquals(ConnectionState.ESTABLISHED, s.state());
            }
        }
    }
}
