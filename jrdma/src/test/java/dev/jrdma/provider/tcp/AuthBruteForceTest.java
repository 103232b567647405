package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.spi.QueuePairSpec;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 45, finding 10: the auth token invited brute force, with no delay or limit per source and
 * one WARNING line per wrong guess (180 000 lines for 180 000 guesses). Now a source gets a few
 * wrong tokens free, then waits 100 ms doubling to 10 s before a request of its is looked at
 * again: a request made while it waits is refused unchecked. So 3 s of guessing as fast as a
 * raw socket can from 127.0.0.2 has at most a dozen tokens checked, the log has a summary line
 * rather than a line a guess, and an honest client from 127.0.0.1 connects and is served
 * throughout.
 */
class AuthBruteForceTest {
    private static final byte[] TOKEN = "right token!".getBytes(StandardCharsets.US_ASCII);   // 12 bytes: 32 are for the descriptor
    private static final long ATTACK_NANOS = TimeUnit.SECONDS.toNanos(3);
    /** Bounded below the ephemeral ports of one address (each guess is a socket of its own). */
    private static final int MAX_GUESSES = 10_000;

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void wrongTokensFromOneSourceAreRateLimitedWithAGrowingDelayAndLoggedAsASummary(String provider) throws Exception {
        AtomicInteger authLines = new AtomicInteger();
        Handler counter = new Handler() {
            @Override
            public void publish(LogRecord r) {
                String m = String.valueOf(r.getMessage());
                if (m.contains("auth token") || m.contains("failed attempts")) {
                    authLines.incrementAndGet();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger jul = Logger.getLogger("dev.jrdma");
        jul.addHandler(counter);
        try (Rdma server = Rdma.builder().provider(provider).build(); LocalRegion exposed = server.allocate(64);
             RdmaServer listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                     ConnectionConfig.builder().authToken(TOKEN).privateData(exposed.toRemote().toDescriptor()).build(),
                     c -> { });
             Rdma client = Rdma.builder().provider(provider).build(); LocalRegion into = client.allocate(8)) {
            InetSocketAddress at = listener.address();
            int checked = 0, refusedUnchecked = 0, guesses = 0;
            long worstHonestMs = 0;
            long end = System.nanoTime() + ATTACK_NANOS;
            authLines.set(0);
            while (System.nanoTime() < end && guesses < MAX_GUESSES) {
                String reason = guess(at, InetAddress.getByName("127.0.0.2"), ("wrong guess " + guesses).getBytes(
                        StandardCharsets.US_ASCII));
                guesses++;
                if (reason.contains("the auth token does not match")) {
                    checked++;
                } else if (reason.contains("too many failed attempts")) {
                    refusedUnchecked++;
                } else {
                    throw new AssertionError("an unexpected answer to a wrong token: " + reason);
                }
                if (guesses % 500 == 0) {   // the honest client, from 127.0.0.1, meanwhile
                    worstHonestMs = Math.max(worstHonestMs, honestRoundTrip(client, at, into));
                }
            }
            System.out.println("AuthBruteForceTest " + provider + ": " + guesses + " wrong tokens in at most 3 s from 127.0.0.2: "
                    + checked + " checked, " + refusedUnchecked + " refused unchecked; " + authLines.get()
                    + " log lines; honest round trips at most " + worstHonestMs + " ms");
            // 4 free, then one check each after 100, 200, 400, 800, 1600 ms: 9 within 3 s (12: scheduling slack).
            assertTrue(checked <= 12, checked + " of " + guesses + " wrong tokens were checked in 3 s (bound 12)");
            assertTrue(guesses >= 100, "the attack made only " + guesses + " guesses");
            assertEquals(guesses, checked + refusedUnchecked);
            assertTrue(authLines.get() <= 2, authLines.get() + " log lines for " + guesses + " wrong tokens (a summary"
                    + " every 10 s at most, for each kind of refusal)");
            assertTrue(worstHonestMs < 1_000, "an honest client took " + worstHonestMs + " ms during the attack");
            // While it waits, even the right token from 127.0.0.2 is refused unchecked: the limit is per
            // source. Wrong tokens until one is checked again (its wait over: 3.2 s at most by now), after
            // which 127.0.0.2 waits 1.6 s or more; the right token at once then.
            boolean checkedAgain = false;
            for (long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15); !checkedAgain && System.nanoTime() < until; ) {
                checkedAgain = guess(at, InetAddress.getByName("127.0.0.2"), "one more".getBytes(StandardCharsets.US_ASCII))
                        .contains("the auth token does not match");
            }
            assertTrue(checkedAgain, "a wrong token was looked at again once the wait was over");
            String rightButWaiting = guess(at, InetAddress.getByName("127.0.0.2"), TOKEN);
            assertTrue(rightButWaiting.contains("too many failed attempts from this address: retry in"), rightButWaiting);
        } finally {
            jul.removeHandler(counter);
        }
    }

    /** A full connect with the right token from 127.0.0.1, a read and a close: how long it took, in ms. */
    private static long honestRoundTrip(Rdma client, InetSocketAddress at, LocalRegion into) {
        long t0 = System.nanoTime();
        try (Connection c = client.connect(at, ConnectionConfig.builder().authToken(TOKEN).build())) {
            c.readSync(RemoteRegion.fromDescriptor(c.peerPrivateData()).slice(0, 8), into);
        } catch (ConnectionRejectedException e) {
            throw new AssertionError("the honest client from 127.0.0.1 was refused: " + e.getMessage(), e);
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    }

    /** One HELLO from {@code from} with {@code token} in jrdma's header: the server's rejection reason. */
    private static String guess(InetSocketAddress server, InetAddress from, byte[] token) throws IOException {
        try (SocketChannel ch = SocketChannel.open()) {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.setOption(StandardSocketOptions.SO_LINGER, 0);   // closed with a reset: no TIME_WAIT holds the port
            ch.bind(new InetSocketAddress(from, 0));
            ch.connect(server);
            ByteBuffer jrdma = ByteBuffer.allocate(12 + token.length).order(ByteOrder.BIG_ENDIAN);
            jrdma.putInt(0x4A524431).putInt(4096).putShort((short) 16).put((byte) token.length).put((byte) 0).put(token);
            QueuePairSpec spec = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
            ByteBuffer hello = ByteBuffer.wrap(TcpHandshake.hello(TcpHandshake.HELLO, spec, new byte[16], jrdma.array()));
            while (hello.hasRemaining()) {
                ch.write(hello);
            }
            ByteBuffer header = readFully(ch, TcpHandshake.HEADER_SIZE);
            byte[] h = header.array();
            assertEquals(TcpHandshake.REJECT, TcpHandshake.checkHeader(h), "a wrong token is rejected");
            byte[] body = readFully(ch, TcpHandshake.bodyLength(h)).array();
            assertEquals(0x4A524458, ByteBuffer.wrap(body).getInt(), "a jrdma rejection");
            return new String(body, 4, body.length - 4, StandardCharsets.UTF_8);
        }
    }

    private static ByteBuffer readFully(SocketChannel ch, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new IOException("the server closed after " + b.position() + " of " + n + " bytes");
            }
        }
        return b;
    }
}
