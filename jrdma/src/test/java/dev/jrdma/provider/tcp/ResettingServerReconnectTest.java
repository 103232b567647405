package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionListener;
import dev.jrdma.Rdma;
import dev.jrdma.ReconnectPolicy;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.spi.QueuePairSpec;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * Issue 45: a server that is a plain socket, completes the tcp provider's handshake (HELLO,
 * ACCEPT, READY_TO_USE) and then resets the connection (SO_LINGER 0), every time. A client with
 * a {@link ReconnectPolicy} of 5 attempts gives up after them, told why; before the health rule
 * every established connection started the count again, and the client reconnected forever
 * (950 times in 20 s).
 */
class ResettingServerReconnectTest {
    private static final int MAX_ATTEMPTS = 5;

    @Test
    void aServerThatCompletesTheHandshakeAndResetsIsGivenUpOnAfterMaxAttempts() throws Exception {
        AtomicInteger handshakes = new AtomicInteger();
        AtomicInteger attempts = new AtomicInteger();
        CompletableFuture<RdmaException> gaveUp = new CompletableFuture<>();
        ConnectionListener listener = new ConnectionListener() {
            @Override
            public void reconnecting(Connection c, int attempt, Duration delay) {
                attempts.incrementAndGet();
            }

            @Override
            public void gaveUp(Connection c, RdmaException last) {
                gaveUp.complete(last);
            }
        };
        ConnectionConfig config = ConnectionConfig.builder()
                .reconnect(ReconnectPolicy.backoff(Duration.ofMillis(2), Duration.ofMillis(10)).withMaxAttempts(MAX_ATTEMPTS),
                        listener)
                .build();
        try (ServerSocketChannel server = ServerSocketChannel.open();
             Rdma client = Rdma.builder().provider("tcp").build()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            // Bounded: the server answers at most 200 connections, and stops when the test ends.
            Thread resetter = Thread.ofPlatform().daemon().start(() -> {
                for (int i = 0; i < 200 && server.isOpen(); i++) {
                    SocketChannel ch;
                    try {
                        ch = server.accept();
                    } catch (IOException e) {
                        return;   // closed at the test's end
                    }
                    try (ch) {
                        if (handshakeThenReset(ch)) {
                            handshakes.incrementAndGet();
                        }
                    } catch (IOException e) {
                        // that client went away mid-handshake: the next one
                    }
                }
            });
            long start = System.nanoTime();
            Connection c = client.connect((InetSocketAddress) server.getLocalAddress(), config);
            RdmaException last;
            try {
                last = gaveUp.get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("no gaveUp within 10 s: " + handshakes.get() + " handshakes completed and reset, "
                        + attempts.get() + " attempts; the client reconnects forever");
            }
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertNotNull(last);
            assertInstanceOf(ConnectionClosedException.class, last, String.valueOf(last));
            assertTrue(last.getMessage().contains("before they were healthy"), last.getMessage());
            assertEquals(MAX_ATTEMPTS, attempts.get(), "attempts after the first connection was reset");
            assertTrue(handshakes.get() <= 1 + MAX_ATTEMPTS, handshakes.get() + " handshakes completed: the application's"
                    + " connection and one per attempt at the most");
            assertTrue(tookMs < 10_000, "gave up after " + tookMs + " ms");
            System.out.println("[reconnect] a server that resets after each handshake: " + handshakes.get()
                    + " handshakes, " + attempts.get() + " attempts, gave up after " + tookMs + " ms: " + last.getMessage());
            c.close();
            server.close();
            resetter.join(TimeUnit.SECONDS.toMillis(10));
        }
    }

    /** Answers the client's HELLO with an ACCEPT, reads its READY_TO_USE, then resets; true if it got that far. */
    private static boolean handshakeThenReset(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        byte[] header = read(ch, TcpHandshake.HEADER_SIZE);
        if (TcpHandshake.checkHeader(header) != TcpHandshake.HELLO) {
            return false;
        }
        read(ch, TcpHandshake.bodyLength(header));
        QueuePairSpec spec = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
        ByteBuffer accept = ByteBuffer.wrap(TcpHandshake.hello(TcpHandshake.ACCEPT, spec, new byte[16], new byte[0]));
        while (accept.hasRemaining()) {
            ch.write(accept);
        }
        byte[] ready = read(ch, TcpHandshake.HEADER_SIZE);
        read(ch, TcpHandshake.bodyLength(ready));
        ch.setOption(StandardSocketOptions.SO_LINGER, 0);   // close sends RST
        return TcpHandshake.checkHeader(ready) == TcpHandshake.READY_TO_USE;
    }

    private static byte[] read(SocketChannel ch, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new IOException("the client closed after " + b.position() + " of " + n + " bytes");
            }
        }
        return b.array();
    }
}
