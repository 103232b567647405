package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketShutdownOutputBySelfTest;

import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.channels.ClosedChannelException;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import static io.netty.testsuite.transport.TestsuitePermutation.randomBufferType;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Netty's {@link SocketShutdownOutputBySelfTest} on jrdma client channels, as
 * {@code EpollSocketShutdownOutputBySelfTest} runs it on epoll's. Every test of it has a plain
 * {@code java.net.ServerSocket} and its accepted {@code Socket} as the other side, which cannot
 * talk to a jrdma channel: here each test's body (the method taking the {@link Bootstrap}, which
 * Netty's {@code @Test} method runs for every permutation) is the same steps and assertions with a
 * {@link RawStreamPeer.Server} and its accepted {@link RawStreamPeer} instead ({@code ss.accept()},
 * {@code s.getInputStream().read()}, {@code s.getOutputStream().write(..)} and {@code s.close()}
 * become {@code accept()}, {@code read()}, {@code write(..)} and {@code close()}).
 *
 * <p>{@code testWriteAfterShutdownOutputNoWritabilityChange} is left as Netty has it: disabled
 * there, for every transport.
 */
class JrdmaSocketShutdownOutputBySelfTest extends SocketShutdownOutputBySelfTest {
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
    public void testShutdownOutput(Bootstrap cb) throws Throwable {
        TestHandler h = new TestHandler();
        RawStreamPeer.Server ss = RawStreamPeer.listen(newSocketAddress());
        RawStreamPeer s = null;
        SocketChannel ch = null;
        try {
            ch = (SocketChannel) cb.handler(h).connect(ss.address()).sync().channel();
            assertTrue(ch.isActive());
            assertFalse(ch.isOutputShutdown());

            s = ss.accept();
            ch.writeAndFlush(randomBufferType(ch.alloc(), new byte[] { 1 }, 0, 1)).sync();
            assertEquals(1, s.read());

            assertTrue(h.ch.isOpen());
            assertTrue(h.ch.isActive());
            assertFalse(h.ch.isInputShutdown());
            assertFalse(h.ch.isOutputShutdown());

            // Make the connection half-closed and ensure read() returns -1.
            ch.shutdownOutput().sync();
            assertEquals(-1, s.read());

            assertTrue(h.ch.isOpen());
            assertTrue(h.ch.isActive());
            assertFalse(h.ch.isInputShutdown());
            assertTrue(h.ch.isOutputShutdown());

            // If half-closed, the peer should be able to write something.
            s.write(new byte[] { 1 });
            assertEquals(1, (int) h.queue.take());
        } finally {
            if (s != null) {
                s.close();
            }
            if (ch != null) {
                ch.close();
            }
            ss.close();
        }
    }

    @Override
    public void testShutdownOutputAfterClosed(Bootstrap cb) throws Throwable {
        TestHandler h = new TestHandler();
        RawStreamPeer.Server ss = RawStreamPeer.listen(newSocketAddress());
        RawStreamPeer s = null;
        try {
            SocketChannel ch = (SocketChannel) cb.handler(h).connect(ss.address()).sync().channel();
            assertTrue(ch.isActive());
            s = ss.accept();

            ch.close().syncUninterruptibly();
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
            if (s != null) {
                s.close();
            }
            ss.close();
        }
    }

    @Override
    public void testShutdownOutputSoLingerNoAssertError(Bootstrap cb) throws Throwable {
        testShutdownSoLingerNoAssertError0(cb, true);
    }

    @Override
    public void testShutdownSoLingerNoAssertError(Bootstrap cb) throws Throwable {
        testShutdownSoLingerNoAssertError0(cb, false);
    }

    private void testShutdownSoLingerNoAssertError0(Bootstrap cb, boolean output) throws Throwable {
        RawStreamPeer.Server ss = RawStreamPeer.listen(newSocketAddress());
        RawStreamPeer s = null;

        ChannelFuture cf = null;
        try {
            cf = cb.option(ChannelOption.SO_LINGER, 1).handler(new ChannelInboundHandlerAdapter())
                    .connect(ss.address()).sync();
            s = ss.accept();

            cf.sync();

            if (output) {
                ((SocketChannel) cf.channel()).shutdownOutput().sync();
            } else {
                ((SocketChannel) cf.channel()).shutdown().sync();
            }
        } finally {
            if (s != null) {
                s.close();
            }
            if (cf != null) {
                cf.channel().close();
            }
            ss.close();
        }
    }

    /** As Netty's (private there). */
    private static void checkThrowable(Throwable cause) throws Throwable {
        // Depending on OIO / NIO both are ok
        if (!(cause instanceof ClosedChannelException) && !(cause instanceof SocketException)) {
            throw cause;
        }
    }

    /** Netty's (private there), less the writability record that only its disabled test reads. */
    private static final class TestHandler extends SimpleChannelInboundHandler<ByteBuf> {
        volatile SocketChannel ch;
        final BlockingQueue<Byte> queue = new LinkedBlockingQueue<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ch = (SocketChannel) ctx.channel();
        }

        @Override
        public void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
            queue.offer(msg.readByte());
        }
    }
}
