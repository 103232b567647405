package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.os.Sockets;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The exception barrier: a throwable in one connection's progress on the server's IO thread
 * (injected through {@link TcpQueuePair#progressFault}) ends that connection, whose operations
 * complete once, in error; the IO thread lives on, its other connection keeps working, and the
 * listener still accepts. In 0.1 the thread died and every connection on it hung.
 */
class ExceptionBarrierTest {
    private static final long T = 20;

    @AfterEach
    void clearFault() {
        TcpQueuePair.progressFault = null;
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({"tcp, RuntimeException", "tcp, Error", "shm, RuntimeException", "shm, Error"})
    void aThrowableInOneConnectionsProgressCostsOnlyThatConnection(String provider, String kind) throws Exception {
        assertTrue(TcpQueuePair.FAULT_INJECTION, "the unit tests run with -Djrdma.faultInjection=true (pom.xml)");
        try (Rdma server = Rdma.builder().provider(provider).ioThreads(1).build();
             Rdma clients = Rdma.builder().provider(provider).build();
             LocalRegion exposed = server.allocate(4096)) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            ConnectionConfig config = ConnectionConfig.builder().privateData(exposed.toRemote().toDescriptor()).build();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::add);
            Connection victim = clients.connect(l.address());
            Connection victimAtServer = accepted.poll(T, TimeUnit.SECONDS);
            Connection good = clients.connect(l.address());
            accepted.poll(T, TimeUnit.SECONDS);
            RemoteRegion word = RemoteRegion.fromDescriptor(good.peerPrivateData()).slice(0, 8);
            LocalRegion into = clients.allocate(8);
            good.readSync(word, into);

            int victimPort = victimAtServer.remoteAddress().getPort();
            AtomicInteger thrown = new AtomicInteger();
            TcpQueuePair.progressFault = qp -> {
                InetSocketAddress peer;
                try {
                    peer = Sockets.remoteAddress(qp.fd());
                } catch (RuntimeException notConnected) {
                    return;   // another connection of this JVM, already closing: not the victim
                }
                if (peer.getPort() == victimPort) {
                    thrown.incrementAndGet();
                    if (kind.equals("Error")) {
                        throw new StackOverflowError("injected into the victim's progress");
                    }
                    throw new IllegalStateException("injected into the victim's progress");
                }
            };
            // The victim's operation completes once, in error, because its server-side connection ended.
            CompletableFuture<Void> read = victim.read(word, clients.allocate(8));
            CompletionException e = assertThrows(CompletionException.class, () -> read.orTimeout(T, TimeUnit.SECONDS).join());
            assertInstanceOf(ConnectionClosedException.class, e.getCause(), String.valueOf(e.getCause()));
            TcpQueuePair.progressFault = null;
            assertTrue(thrown.get() >= 1);
            // The server's side of the victim says why.
            for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                 victimAtServer.state() == ConnectionState.ESTABLISHED && System.nanoTime() < end; ) {
                Thread.onSpinWait();
            }
            assertNotEquals(ConnectionState.ESTABLISHED, victimAtServer.state());
            // The IO thread that threw serves the other connection still, and the listener accepts.
            for (int i = 0; i < 1000; i++) {
                good.readSync(word, into);
            }
            assertEquals(ConnectionState.ESTABLISHED, good.state());
            try (Connection later = clients.connect(l.address())) {
                later.readSync(word, into);
            }
            long ioThreads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("jrdma-io-" + provider) && t.isAlive()).count();
            assertTrue(ioThreads >= 2, "the server's and the clients' IO threads are alive: " + ioThreads);
        }
    }
}
