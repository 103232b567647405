package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
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
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 45, finding 3: a connection with nothing to do rests, out of its IO thread's passes,
 * until epoll says its socket is ready (tcp: the peer's frames; shm: the doorbell the peer rings
 * for a resting ring, and the socket's end) or something is posted to it. Each way in which work
 * reaches a resting connection, from both ends at rest: a message, a one-sided write and read
 * that the peer only answers, a receive posted for a message that waited for one, the peer's
 * close, and our close. (A post to a resting connection whose peer never answers:
 * {@code SilentPeerTest.aPeerStoppedWhileTheConnectionRestsIsFoundAtTheNextPost}.)
 */
class RestingConnectionTest {

    /** Completion queues at rest in this process now. */
    static int atRest() {
        return TcpCompletionQueue.AT_REST.get();
    }

    /**
     * Waits (up to 10 s) until at least {@code n} completion queues of this process are at rest.
     * The count is the process's: a test reads it before it connects and adds its own.
     */
    static void awaitAtRest(int n, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (atRest() < n) {
            assertTrue(System.nanoTime() < deadline, what + ": " + atRest() + " queues at rest after 10 s, not " + n);
            Thread.onSpinWait();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void workReachesConnectionsAtRestFromEveryDirection(String provider) throws Exception {
        int base = atRest();
        long rings = TcpQueuePair.RING_CONNECTIONS.get();
        CompletableFuture<Connection> accepted = new CompletableFuture<>();
        try (Rdma server = Rdma.builder().provider(provider).ioThreads(1).build();
             Rdma client = Rdma.builder().provider(provider).ioThreads(1).build();
             LocalRegion target = server.allocate(64);
             LocalRegion msg = client.allocate(64);
             LocalRegion back = client.allocate(64)) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), accepted::complete);
            Connection c = client.connect(l.address());
            Connection s = accepted.get(10, TimeUnit.SECONDS);
            assertEquals(provider.equals("shm") ? 2 : 0, TcpQueuePair.RING_CONNECTIONS.get() - rings,
                    "shm's ends take the rings (the doorbell path), tcp's the socket");
            RemoteRegion remote = target.toRemote();
            awaitAtRest(base + 2, "both ends, idle after the handshake");

            // A message from the client: the server's socket (or ring doorbell) wakes it.
            msg.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            CompletableFuture<Message> got = s.receive();
            c.sendSync(msg.slice(0, 8));
            try (Message m = got.get(10, TimeUnit.SECONDS)) {
                assertEquals(42, m.data().get(ValueLayout.JAVA_LONG, 0));
            }
            awaitAtRest(base + 2, "both ends, idle after a message");

            // One-sided: the server's side only answers (its application does nothing).
            msg.segment().set(ValueLayout.JAVA_LONG, 0, 7);
            c.writeSync(msg.slice(0, 8), remote.slice(0, 8));
            c.readSync(remote.slice(0, 8), back.slice(0, 8));
            assertEquals(7, back.segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(7, target.segment().get(ValueLayout.JAVA_LONG, 0));
            awaitAtRest(base + 2, "both ends, idle after a write and a read");

            // The other way: a message from the server's side to the client, at rest.
            try (LocalRegion out = server.allocate(8)) {
                out.segment().set(ValueLayout.JAVA_LONG, 0, 99);
                CompletableFuture<Message> toClient = c.receive();
                s.sendSync(out);
                try (Message m = toClient.get(10, TimeUnit.SECONDS)) {
                    assertEquals(99, m.data().get(ValueLayout.JAVA_LONG, 0));
                }
            }
            awaitAtRest(base + 2, "both ends, idle after a message back");

            // The peer's close reaches the resting server: it sees the connection end.
            CompletableFuture<Void> ended = new CompletableFuture<>();
            s.onDisconnect(x -> ended.complete(null));
            c.close();
            ended.get(10, TimeUnit.SECONDS);
            assertEquals(ConnectionState.CLOSED, s.state());
        }
    }

    /**
     * A SEND that found no receive waits, parked, and its connection does not rest meanwhile (the
     * RNR deadline runs); once the application posts a receive (takes the message it holds), the
     * parked SEND lands.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void aParkedSendLandsWhenAReceiveIsPostedLater(String provider) throws Exception {
        CompletableFuture<Connection> accepted = new CompletableFuture<>();
        dev.jrdma.ConnectionConfig one = dev.jrdma.ConnectionConfig.builder().receiveQueueDepth(1).rnrRetry(6).build();
        try (Rdma server = Rdma.builder().provider(provider).ioThreads(1).build();
             Rdma client = Rdma.builder().provider(provider).ioThreads(1).build();
             LocalRegion msg = client.allocate(8)) {
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), one, accepted::complete);
            Connection c = client.connect(l.address(), one);
            Connection s = accepted.get(10, TimeUnit.SECONDS);
            msg.segment().set(ValueLayout.JAVA_LONG, 0, 1);
            c.sendSync(msg);   // takes the server's one receive
            msg.segment().set(ValueLayout.JAVA_LONG, 0, 2);
            CompletableFuture<Void> second = c.send(msg);   // parked at the server: no receive
            Message first = s.receive().get(10, TimeUnit.SECONDS);
            assertEquals(1, first.data().get(ValueLayout.JAVA_LONG, 0));
            assertTrue(!second.isDone(), "the second SEND waits for a receive");
            first.close();   // its buffer is posted again: the parked SEND lands in it
            try (Message m = s.receive().get(10, TimeUnit.SECONDS)) {
                assertEquals(2, m.data().get(ValueLayout.JAVA_LONG, 0));
            }
            second.get(10, TimeUnit.SECONDS);
        }
    }
}
