package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma channels through Netty's bootstraps, on tcp and shm: the byte stream, half-closure,
 * graceful and abortive close, a refused connect, flow control against a reader that does not
 * read, and a peer that breaks the stream's protocol. (Netty's own transport suite runs in the
 * Jrdma*Test classes beside this one.)
 */
class JrdmaChannelTest {
    private static final long T = 30;
    private final TestGroups groups = new TestGroups();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    private JrdmaEventLoopGroup group(String provider) {
        return groups.open(provider, 2);
    }

    @AfterEach
    void shutDown() throws Exception {
        for (AutoCloseable c : closeables) {
            c.close();
        }
        groups.shutDownAll(T);
    }

    private static InetSocketAddress anyPort() {
        return new InetSocketAddress("127.0.0.1", 0);
    }

    /** A server whose children echo what they read. */
    private static Channel echoServer(JrdmaEventLoopGroup g) throws InterruptedException {
        return new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ctx.writeAndFlush(msg);
                    }
                }).bind(anyPort()).sync().channel();
    }

    private static Channel client(JrdmaEventLoopGroup g, InetSocketAddress to, Collector c) throws InterruptedException {
        return new Bootstrap().group(g).channel(JrdmaSocketChannel.class).handler(c).connect(to).sync().channel();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void bytesComeBackInOrderThroughAnEchoServer(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        Channel server = echoServer(g);
        Collector got = new Collector();
        byte[] data = new byte[3 * 1024 * 1024 + 17];
        new Random(7).nextBytes(data);
        got.expect = data.length;
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), got);
        assertTrue(ch.localAddress() instanceof InetSocketAddress l && l.getPort() > 0, "local " + ch.localAddress());
        assertEquals(server.localAddress(), ch.remoteAddress());
        Random sizes = new Random(8);
        for (int at = 0; at < data.length; ) {
            int n = Math.min(data.length - at, 1 + sizes.nextInt(100_000));
            ch.write(Unpooled.wrappedBuffer(data, at, n));
            at += n;
            if (sizes.nextInt(4) == 0) {
                ch.flush();
            }
        }
        ch.flush();
        assertArrayEquals(data, got.all.get(T, TimeUnit.SECONDS));
        ch.close().sync();
        server.close().sync();
    }

    /**
     * A task that queues itself again on the loop (as a handler that reads or writes in a loop
     * does) must not keep the loop from polling jrdma: the echo of a write made before it comes
     * back while the task is still at it. The loop runs the client and the echo server both.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aTaskThatQueuesItselfAgainDoesNotStopTheLoopPollingItsChannels(String provider) throws Exception {
        JrdmaEventLoopGroup g = groups.open(provider, 1);
        Channel server = echoServer(g);
        Collector got = new Collector(5);
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), got);
        int limit = 5_000_000;
        AtomicInteger runs = new AtomicInteger();
        Runnable again = new Runnable() {
            @Override
            public void run() {
                if (!got.all.isDone() && runs.incrementAndGet() < limit) {
                    ch.eventLoop().execute(this);
                }
            }
        };
        ch.eventLoop().execute(() -> {
            ch.writeAndFlush(Unpooled.copiedBuffer("hello", StandardCharsets.US_ASCII));
            ch.eventLoop().execute(again);
        });
        assertArrayEquals("hello".getBytes(StandardCharsets.US_ASCII), got.all.get(T, TimeUnit.SECONDS));
        assertTrue(runs.get() < limit, "the echo came back only after the task had run " + runs.get()
                + " times and stopped: the loop did not poll its channels in between");
        ch.close().sync();
        server.close().sync();
    }

    /** A group shut down with its channels open (a server, a client, the server's child) closes them and ends. */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aGroupShutDownWithItsChannelsOpenClosesThemAndEnds(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        Channel server = echoServer(g);
        Collector got = new Collector(2);
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), got);
        ch.writeAndFlush(Unpooled.copiedBuffer("hi", StandardCharsets.US_ASCII));
        got.all.get(T, TimeUnit.SECONDS);
        groups.shutDownAll(T);
        assertFalse(ch.isOpen(), "the client channel is closed");
        assertFalse(server.isOpen(), "the server channel is closed");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void halfClosureEndsTheInputAfterTheDataAndTheOtherWayStaysOpen(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        LinkedBlockingQueue<Object> serverSaw = new LinkedBlockingQueue<>();
        Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ByteBuf b = (ByteBuf) msg;
                        serverSaw.add(b.toString(StandardCharsets.US_ASCII));
                        b.release();
                    }

                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        serverSaw.add(evt);
                        if (evt instanceof ChannelInputShutdownEvent) {
                            assertTrue(((SocketChannel) ctx.channel()).isInputShutdown());
                            ctx.writeAndFlush(Unpooled.copiedBuffer("bye", StandardCharsets.US_ASCII))
                                    .addListener(f -> ctx.close());
                        }
                    }
                }).bind(anyPort()).sync().channel();
        Collector got = new Collector();
        got.expect = 3;
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), got);
        ch.writeAndFlush(Unpooled.copiedBuffer("hello", StandardCharsets.US_ASCII)).sync();
        ((SocketChannel) ch).shutdownOutput().sync();
        assertTrue(((SocketChannel) ch).isOutputShutdown());
        StringBuilder read = new StringBuilder();
        Object e;
        while (!((e = serverSaw.poll(T, TimeUnit.SECONDS)) instanceof ChannelInputShutdownEvent)) {
            assertTrue(e instanceof String, "data, then the end of input: " + e);
            read.append(e);
        }
        assertEquals("hello", read.toString());
        assertEquals("bye", new String(got.all.get(T, TimeUnit.SECONDS), StandardCharsets.US_ASCII));
        got.inactive.get(T, TimeUnit.SECONDS);
        assertNull(got.caught.get(), "a graceful close is no error");
        server.close().sync();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void soLingerZeroResetsThePeerAndAGracefulCloseDoesNot(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        for (int linger : new int[] {0, -1}) {
            Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                    .childOption(ChannelOption.SO_LINGER, linger)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelActive(ChannelHandlerContext ctx) {
                            ctx.close();
                        }
                    }).bind(anyPort()).sync().channel();
            Collector got = new Collector();
            client(g, (InetSocketAddress) server.localAddress(), got);
            got.inactive.get(T, TimeUnit.SECONDS);
            Throwable caught = got.caught.get();
            if (linger == 0) {
                IOException reset = assertInstanceOf(IOException.class, caught);
                assertTrue(reset.getMessage().contains("reset"), reset.getMessage());
            } else {
                assertNull(caught, "a graceful close is no error");
            }
            server.close().sync();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void connectingWhereNothingListensFailsWithConnectException(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        ChannelFuture f = new Bootstrap().group(g).channel(JrdmaSocketChannel.class).handler(new ChannelInboundHandlerAdapter())
                .connect(new InetSocketAddress("127.0.0.1", port));
        assertTrue(f.await(T, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, f.cause(), String.valueOf(f.cause()));
        assertTrue(f.channel().closeFuture().await(T, TimeUnit.SECONDS), "the channel of a failed connect closes");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aWriterStopsWithinTheWindowWhenTheReaderDoesNotReadAndGoesOnWhenItDoes(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        CompletableFuture<Channel> child = new CompletableFuture<>();
        Collector serverGot = new Collector();
        Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(serverGot);
                        child.complete(ch);
                    }
                }).bind(anyPort()).sync().channel();
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), new Collector());
        byte[] data = new byte[8 * 1024 * 1024];
        new Random(9).nextBytes(data);
        serverGot.expect = data.length;
        ChannelFuture written = ch.writeAndFlush(Unpooled.wrappedBuffer(data));
        // The reader reads nothing: the writer runs out of data credits (all but the reserved ones are used).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        JrdmaSocketChannel jc = (JrdmaSocketChannel) ch;
        while (ch.eventLoop().submit(() -> jc.stream().credits()).get() > ByteStream.RESERVED) {
            assertTrue(System.nanoTime() < deadline, "the writer ran out of credits");
            Thread.onSpinWait();
        }
        ConnectionConfig cc = JrdmaSocketChannelConfig.DEFAULT_CONNECTION_CONFIG;
        long window = (long) (cc.receiveQueueDepth() - ByteStream.RESERVED + 1) * cc.receiveBufferSize();
        long pending = ch.eventLoop().submit(() -> ch.unsafe().outboundBuffer().totalPendingWriteBytes()).get();
        assertTrue(pending >= data.length - window, "at most the window (" + window + " bytes) left the writer; "
                + (data.length - pending) + " did");
        assertFalse(written.isDone(), "8 MiB do not fit the window of a reader that reads nothing");
        assertTrue(!ch.isWritable(), "the writer is not writable while its peer reads nothing");
        Channel c = child.get(T, TimeUnit.SECONDS);
        c.config().setAutoRead(true);
        assertArrayEquals(data, serverGot.all.get(T, TimeUnit.SECONDS));
        assertTrue(written.await(T, TimeUnit.SECONDS) && written.isSuccess(), String.valueOf(written.cause()));
        server.close().sync();
    }

    /**
     * read() asked twice before the loop runs makes one read round, as epoll's one pending read:
     * two rounds read the byte and then fire channelReadComplete with no data (and, near the end of
     * input, more such rounds than Netty's SocketHalfClosedTest allows).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void readAskedTwiceBeforeTheLoopRunsIsOneRoundWithNoEmptyReadComplete(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        CompletableFuture<Channel> child = new CompletableFuture<>();
        AtomicInteger bytesRead = new AtomicInteger();
        AtomicInteger readCompletes = new AtomicInteger();
        AtomicInteger emptyReadCompletes = new AtomicInteger();
        Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            private boolean readSinceComplete;

                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ByteBuf b = (ByteBuf) msg;
                                bytesRead.addAndGet(b.readableBytes());
                                readSinceComplete = true;
                                b.release();
                            }

                            @Override
                            public void channelReadComplete(ChannelHandlerContext ctx) {
                                readCompletes.incrementAndGet();
                                if (!readSinceComplete) {
                                    emptyReadCompletes.incrementAndGet();
                                }
                                readSinceComplete = false;
                            }
                        });
                        child.complete(ch);
                    }
                }).bind(anyPort()).sync().channel();
        Channel ch = client(g, (InetSocketAddress) server.localAddress(), new Collector());
        ch.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {42})).sync();
        Channel c = child.get(T, TimeUnit.SECONDS);
        JrdmaSocketChannel jc = (JrdmaSocketChannel) c;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!c.eventLoop().submit(() -> jc.stream().hasInbound()).get()) {
            assertTrue(System.nanoTime() < deadline, "the byte reached the reader's stream");
            Thread.onSpinWait();
        }
        c.eventLoop().submit(() -> {
            c.read();
            c.read();
        }).get(T, TimeUnit.SECONDS);
        c.eventLoop().submit(() -> { }).get(T, TimeUnit.SECONDS);   // after every round the two reads queued
        assertEquals(1, bytesRead.get(), "the byte was read");
        assertEquals(0, emptyReadCompletes.get(), "channelReadComplete with no data");
        assertEquals(1, readCompletes.get(), "read rounds");
        server.close().sync();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aPeerThatBreaksTheProtocolLosesItsConnectionAndNobodyElseIsTouched(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        LinkedBlockingQueue<Throwable> serverCaught = new LinkedBlockingQueue<>();
        Channel server = new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ctx.writeAndFlush(msg);
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                serverCaught.add(cause);
                                ctx.close();
                            }
                        });
                    }
                }).bind(anyPort()).sync().channel();
        Collector good = new Collector();
        good.expect = 4;
        Channel goodClient = client(g, (InetSocketAddress) server.localAddress(), good);
        Rdma raw = Rdma.builder().provider(provider).build();
        closeables.add(raw);
        ConnectionConfig cc = ConnectionConfig.builder().receiveQueueDepth(16).build();
        String[] lies = {"plain", "kind", "credits"};
        for (String lie : lies) {
            Connection c = raw.connect((InetSocketAddress) server.localAddress(), cc);
            try (LocalRegion buf = raw.allocate(16)) {
                switch (lie) {
                    case "plain" -> c.sendSync(buf);                                    // no immediate value
                    case "kind" -> c.sendWithImmSync(StreamMessage.imm(9, 0), buf);     // no such kind
                    default -> c.sendWithImmSync(StreamMessage.imm(StreamMessage.DATA, 5), buf);   // credits never taken
                }
            }
            Throwable t = serverCaught.poll(T, TimeUnit.SECONDS);
            StreamProtocolException e = assertInstanceOf(StreamProtocolException.class, t);
            assertTrue(e.getMessage().contains("broke the stream protocol"), e.getMessage());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (c.state() != dev.jrdma.ConnectionState.CLOSED && c.state() != dev.jrdma.ConnectionState.ERROR
                    && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertTrue(c.state() == dev.jrdma.ConnectionState.CLOSED || c.state() == dev.jrdma.ConnectionState.ERROR,
                    "the liar's connection ended: " + c.state());
            c.close();
        }
        goodClient.writeAndFlush(Unpooled.copiedBuffer("ping", StandardCharsets.US_ASCII));
        assertEquals("ping", new String(good.all.get(T, TimeUnit.SECONDS), StandardCharsets.US_ASCII));
        goodClient.close().sync();
        server.close().sync();
    }
}
