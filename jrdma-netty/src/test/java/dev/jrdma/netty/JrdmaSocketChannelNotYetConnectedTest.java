package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketChannelNotYetConnectedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.channels.NotYetConnectedException;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Netty's {@link SocketChannelNotYetConnectedTest} on jrdma client channels, as
 * {@code EpollSocketChannelNotYetConnectedTest} runs it on epoll's. Both of its tests are here with
 * one change each, for what a jrdma client channel cannot do:
 *
 * <ul>
 *   <li>{@code testShutdownNotYetConnected} gets its unconnected channel with {@code bind(address)},
 *       which a jrdma client channel refuses (its local address is the connection manager's to
 *       pick: {@code doBind} throws {@link UnsupportedOperationException}), so the test would stop
 *       there. Here the channel is only registered ({@code register()}), registered and not
 *       connected as Netty's bound one is; the shutdowns and what they must fail with are Netty's.</li>
 *   <li>{@code readMustBePendingUntilChannelIsActive} has a NIO server as the peer, which writes the
 *       int 42 once it has the connection: here a {@link RawStreamPeer.Server}, whose accepted peer
 *       writes the same four bytes as soon as it is accepted, while the client may still be
 *       completing its connect. The client's handler and its assertions are Netty's.</li>
 * </ul>
 */
class JrdmaSocketChannelNotYetConnectedTest extends SocketChannelNotYetConnectedTest {
    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return JrdmaSocketTestPermutation.INSTANCE.clientSocket();
    }

    @Override
    protected SocketAddress newSocketAddress() {
        return JrdmaSocketTestPermutation.newSocketAddress();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return JrdmaSocketTestPermutation.allocators();
    }

    @Override
    public void testShutdownNotYetConnected(Bootstrap cb) throws Throwable {
        SocketChannel ch = (SocketChannel) cb.handler(new ChannelInboundHandlerAdapter())
                .register().syncUninterruptibly().channel();
        try {
            try {
                ch.shutdownInput().syncUninterruptibly();
                fail();
            } catch (Throwable cause) {
                checkThrowable(cause);
            }

            try {
                ch.shutdownOutput().syncUninterruptibly();
                fail();
            } catch (Throwable cause) {
                checkThrowable(cause);
            }
        } finally {
            ch.close().syncUninterruptibly();
        }
    }

    /** As Netty's (private there). */
    private static void checkThrowable(Throwable cause) throws Throwable {
        // Depending on OIO / NIO both are ok
        if (!(cause instanceof NotYetConnectedException) && !(cause instanceof SocketException)) {
            throw cause;
        }
    }

    @Override
    @Test
    @Timeout(30)
    public void readMustBePendingUntilChannelIsActive(TestInfo info) throws Throwable {
        run(info, bootstrap -> {
            try (RawStreamPeer.Server server = RawStreamPeer.listen(newSocketAddress())) {
                final CountDownLatch readLatch = new CountDownLatch(1);
                bootstrap.handler(new ByteToMessageDecoder() {
                    @Override
                    public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
                        assertFalse(ctx.channel().isActive());
                        ctx.read();
                    }

                    @Override
                    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) throws Exception {
                        assertThat(in.readableBytes()).isLessThanOrEqualTo(Integer.BYTES);
                        if (in.readableBytes() == Integer.BYTES) {
                            assertThat(in.readInt()).isEqualTo(42);
                            readLatch.countDown();
                        }
                    }
                });
                ChannelFuture connect = bootstrap.connect(server.address());
                RawStreamPeer peer = null;
                try {
                    peer = server.accept();
                    // Netty's server: ctx.writeAndFlush(Unpooled.copyInt(42)) in its channelActive.
                    peer.write(new byte[] {0, 0, 0, 42});
                    connect.sync();

                    readLatch.await();
                } finally {
                    // Netty's test leaves its client open; here it is closed, before its peer goes.
                    connect.channel().close().sync();
                    if (peer != null) {
                        peer.close();
                    }
                }
            }
        });
    }
}
