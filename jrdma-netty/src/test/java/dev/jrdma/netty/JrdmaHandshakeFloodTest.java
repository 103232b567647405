package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 45, finding 1, on jrdma-netty's own channel: a server channel whose port 500 plain sockets
 * hold, saying nothing or one byte and re-opened as soon as they are dropped, still takes an honest
 * Netty client within 1 s, every time for 5 s, and echoes what it sends. (The protection is the
 * jrdma server's underneath: a deferred accept, eviction of the oldest handshake waiting for its
 * HELLO; {@code HandshakeFloodTest} in jrdma tests it at 1000 sockets.)
 */
class JrdmaHandshakeFloodTest {
    private static final int SOCKETS = 500;
    private final TestGroups groups = new TestGroups();

    @AfterEach
    void shutDown() throws Exception {
        groups.shutDownAll(30);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(120)
    void anHonestNettyClientConnectsWithinASecondWhileSilentSocketsChurn(String provider) throws Exception {
        JrdmaEventLoopGroup g = groups.open(provider, 2);
        Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childHandler(new Echo()).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        InetSocketAddress at = (InetSocketAddress) server.localAddress();
        echo(g, at, 0);   // warm: the first connection's class loading is not the attack's
        List<Long> connectMs = new ArrayList<>();
        long opened;
        try (Selector selector = Selector.open()) {
            for (int i = 0; i < SOCKETS; i++) {
                open(selector, at, i);
            }
            opened = SOCKETS;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            for (int i = 0; i < 100 && (i < 3 || System.nanoTime() < until); i++) {
                opened += churn(selector, at);
                connectMs.add(echo(g, at, i));
            }
            for (SelectionKey k : selector.keys()) {
                k.channel().close();
            }
        }
        server.close().sync();
        long worst = connectMs.stream().max(Long::compare).orElse(0L);
        System.out.println("JrdmaHandshakeFloodTest " + provider + ": " + connectMs.size() + " honest connects, at most "
                + worst + " ms, while " + SOCKETS + " sockets churned (" + opened + " opened)");
        assertTrue(worst < 1_000, "an honest Netty client took " + worst + " ms to connect (" + connectMs + ") while "
                + SOCKETS + " silent sockets churned; bound 1000 ms");
    }

    /** Writes back what it reads; one for all the server's children. */
    @ChannelHandler.Sharable
    private static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.writeAndFlush(msg);
        }
    }

    /** Connects, echoes 8 bytes and closes: how long the connect took, in ms. */
    private static long echo(JrdmaEventLoopGroup g, InetSocketAddress at, int round) throws Exception {
        Collector got = new Collector(8);
        long t0 = System.nanoTime();
        Channel ch = new Bootstrap().group(g).channel(JrdmaSocketChannel.class).handler(got)
                .connect(at).sync().channel();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        byte[] data = {1, 2, 3, 4, 5, 6, 7, (byte) round};
        ch.writeAndFlush(Unpooled.wrappedBuffer(data));
        assertArrayEquals(data, got.all.get(30, TimeUnit.SECONDS), "the echo of round " + round);
        ch.close().sync();
        return ms;
    }

    /** Re-opens what the server dropped since the last look; the number opened. */
    private static int churn(Selector selector, InetSocketAddress at) throws IOException {
        int opened = 0;
        selector.selectNow();
        ByteBuffer scratch = ByteBuffer.allocate(64);
        for (SelectionKey k : selector.selectedKeys()) {
            SocketChannel ch = (SocketChannel) k.channel();
            int which = (Integer) k.attachment();
            boolean gone;
            try {
                if (k.isConnectable()) {
                    if (ch.finishConnect()) {
                        dribble(ch, k, which);
                    }
                    gone = false;
                } else {
                    scratch.clear();
                    gone = ch.read(scratch) < 0;
                }
            } catch (IOException e) {
                gone = true;
            }
            if (gone) {
                k.cancel();
                ch.close();
                open(selector, at, which);
                opened++;
            }
        }
        selector.selectedKeys().clear();
        return opened;
    }

    private static void open(Selector selector, InetSocketAddress at, int which) throws IOException {
        SocketChannel ch = SocketChannel.open();
        ch.configureBlocking(false);
        SelectionKey k = ch.register(selector, SelectionKey.OP_CONNECT, which);
        if (ch.connect(at)) {
            dribble(ch, k, which);
        }
    }

    /** Connected: the odd ones send one byte (of a handshake header), the even ones nothing. */
    private static void dribble(SocketChannel ch, SelectionKey k, int which) throws IOException {
        k.interestOps(SelectionKey.OP_READ);
        if ((which & 1) == 1) {
            ch.write(ByteBuffer.wrap(new byte[] {'J'}));
        }
    }
}
