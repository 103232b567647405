package dev.jrdma.netty;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link JrdmaByteBufAllocator}: its direct buffers are regions of jrdma's registered-memory pool
 * (given back when they grow and at their last release), and a channel sends them without a
 * copy, holding them until their messages completed, also when the peer goes away meanwhile.
 * (Netty's transport suite runs every test with this allocator too: JrdmaSocketTestPermutation.)
 */
class JrdmaByteBufAllocatorTest {
    private static final long T = 30;
    private final TestGroups groups = new TestGroups();

    private JrdmaEventLoopGroup group(String provider) {
        return groups.open(provider, 2);
    }

    @AfterEach
    void shutDown() throws Exception {
        groups.shutDownAll(T);
    }

    private static LocalRegion regionOf(ByteBuf b, Rdma rdma) {
        RegisteredByteBuf.RegisteredSpan span = RegisteredByteBuf.regionOf(b, b.readerIndex(), b.readableBytes(), rdma);
        return span == null ? null : span.region();
    }

    private static void assertGivenBack(LocalRegion r) {
        IllegalStateException e = assertThrows(IllegalStateException.class, r::segment, "the region was given back");
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void aDirectBufferIsRegisteredMemoryThatGrowsIntoANewRegionAndIsGivenBackAtItsLastRelease() {
        JrdmaEventLoopGroup g = group("tcp");
        JrdmaByteBufAllocator alloc = g.allocator();
        ByteBuf b = alloc.directBuffer(100);
        try {
            assertTrue(b.isDirect());
            b.writeBytes(new byte[] {1, 2, 3, 4, 5});
            LocalRegion first = regionOf(b, g.rdma());
            assertNotNull(first, "a direct buffer of the allocator is in registered memory");
            assertEquals(5, first.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4), "its bytes are the region's");

            b.writeBytes(new byte[10_000]);   // grows
            LocalRegion grown = regionOf(b, g.rdma());
            assertNotNull(grown);
            assertNotSame(first, grown, "growing took a new region");
            assertGivenBack(first);
            byte[] head = new byte[5];
            b.getBytes(0, head);
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, head, "growing kept the bytes");

            ByteBuf other = group("tcp").allocator().directBuffer(64).writeLong(7);
            try {
                assertNull(regionOf(other, g.rdma()), "another Rdma's memory is not this one's: copied, not sent from");
            } finally {
                other.release();
            }
            b.retain();
            b.release();
            assertNotNull(regionOf(b, g.rdma()), "a release that is not the last one keeps the memory");
            assertTrue(b.release(), "the last release");
            assertGivenBack(grown);
        } finally {
            if (b.refCnt() > 0) {
                b.release(b.refCnt());
            }
        }
    }

    @Test
    void emptyHugeAndHeapBuffers() {
        JrdmaEventLoopGroup g = group("tcp");
        JrdmaByteBufAllocator alloc = g.allocator();
        ByteBuf empty = alloc.directBuffer(0, 1 << 20);
        ByteBuf huge = alloc.directBuffer(3 << 20);   // beyond the pool's largest class: a registration of its own
        ByteBuf heap = alloc.heapBuffer(64);
        try {
            assertEquals(0, empty.capacity());
            empty.writeInt(42);
            assertEquals(42, empty.getInt(0), "an empty buffer grows as any other");
            byte[] data = new byte[3 << 20];
            new Random(3).nextBytes(data);
            huge.writeBytes(data);
            byte[] back = new byte[data.length];
            huge.getBytes(0, back);
            assertArrayEquals(data, back);
            assertNotNull(regionOf(huge, g.rdma()));
            assertFalse(heap.isDirect());
            heap.writeLong(1);
            assertNull(regionOf(heap, g.rdma()), "a heap buffer is not registered");
            ByteBuf preferred = alloc.buffer();
            assertTrue(preferred.isDirect(), "buffer() is a direct one: the allocator prefers registered memory");
            preferred.release();
        } finally {
            empty.release();
            huge.release();
            heap.release();
        }
    }

    private static Channel server(JrdmaEventLoopGroup g, Collector into, boolean autoRead) throws InterruptedException {
        return new ServerBootstrap().group(g).channel(JrdmaServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childHandler(into).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private static Channel client(JrdmaEventLoopGroup g, Channel server) throws InterruptedException {
        return new Bootstrap().group(g).channel(JrdmaSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, g.allocator())
                .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel();
    }

    private static long sentWithoutCopy(Channel c) throws Exception {
        return c.eventLoop().submit(() -> ((JrdmaSocketChannel) c).bytesSentWithoutCopy()).get(T, TimeUnit.SECONDS);
    }

    /** Waits, one loop pass at a time, until {@code condition} holds on {@code c}'s loop. */
    private static void awaitOnLoop(Channel c, BooleanSupplier condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!c.eventLoop().submit(condition::getAsBoolean).get(T, TimeUnit.SECONDS)) {
            if (System.nanoTime() > deadline) {
                fail("not within " + T + " s: " + what);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void registeredBuffersAndTheirSlicesGoWithoutACopyAndArriveIntactOthersAreCopied(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        byte[] data = new byte[(1 << 20) + 13];
        new Random(11).nextBytes(data);
        int sliceAt = 1000, sliceLength = 3 * JrdmaSocketChannel.ZERO_COPY_MIN + 5;
        byte[] small = Arrays.copyOf(data, JrdmaSocketChannel.ZERO_COPY_MIN - 1);
        byte[] header = Arrays.copyOf(data, 9);
        byte[] frame = Arrays.copyOfRange(data, 9, 9 + 2 * JrdmaSocketChannel.ZERO_COPY_MIN);
        int total = data.length + sliceLength + data.length + small.length + header.length + frame.length;
        Collector got = new Collector(total);
        Channel server = server(g, got, true);
        Channel c = client(g, server);

        ByteBuf registered = g.allocator().directBuffer(data.length).writeBytes(data);
        c.writeAndFlush(registered).sync();
        assertEquals(data.length, sentWithoutCopy(c), "the whole registered buffer went from its own memory");

        ByteBuf source = g.allocator().directBuffer(data.length).writeBytes(data);
        c.writeAndFlush(source.retainedSlice(sliceAt, sliceLength)).sync();
        source.release();
        assertEquals(data.length + sliceLength, sentWithoutCopy(c), "a slice of one went from its own memory too");

        c.writeAndFlush(Unpooled.wrappedBuffer(data)).sync();
        c.writeAndFlush(g.allocator().directBuffer(small.length).writeBytes(small)).sync();
        assertEquals(data.length + sliceLength, sentWithoutCopy(c), "a heap buffer, and one below the threshold, were copied");
        c.write(Unpooled.wrappedBuffer(header));
        c.writeAndFlush(g.allocator().directBuffer(frame.length).writeBytes(frame)).sync();
        assertEquals(data.length + sliceLength, sentWithoutCopy(c),
                "one that fits in the slot a small write began was copied into it: one message, not two");

        byte[] all = got.all.get(T, TimeUnit.SECONDS);
        assertEquals(total, all.length, "nothing more came");
        assertArrayEquals(data, Arrays.copyOfRange(all, 0, data.length));
        assertArrayEquals(Arrays.copyOfRange(data, sliceAt, sliceAt + sliceLength),
                Arrays.copyOfRange(all, data.length, data.length + sliceLength), "the slice's bytes, from its offset");
        assertArrayEquals(data, Arrays.copyOfRange(all, data.length + sliceLength, 2 * data.length + sliceLength));
        int at = 2 * data.length + sliceLength;
        assertArrayEquals(small, Arrays.copyOfRange(all, at, at + small.length));
        assertArrayEquals(Arrays.copyOf(data, 9 + frame.length), Arrays.copyOfRange(all, at + small.length, total));
        c.close().sync();
        server.close().sync();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void theChannelHoldsABufferUntilItsMessagesEndedAndLetsItGoWhenTheyFail(String provider) throws Exception {
        // The server on a group of its own, whose one loop the test blocks: on tcp and shm a send
        // completes when the peer's IO loop took it, so the client's messages stay out.
        JrdmaEventLoopGroup serverGroup = groups.open(provider, 1);
        JrdmaEventLoopGroup g = group(provider);
        Collector got = new Collector(Integer.MAX_VALUE);
        Channel server = server(serverGroup, got, true);
        Channel c = client(g, server);
        int size = 2 * 32 * 1024;   // two messages, within the window (default 32 x 32 KiB)
        ByteBuf b = g.allocator().directBuffer(size).writeZero(size);
        b.retain();   // the test's own reference, to watch the channel's
        java.util.concurrent.CountDownLatch blocked = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        serverGroup.execute(() -> {
            blocked.countDown();
            try {
                release.await(T, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertTrue(blocked.await(T, TimeUnit.SECONDS), "the server's loop is blocked");
            c.writeAndFlush(b).sync();   // done once posted: Netty let go of its reference
            assertEquals(size, sentWithoutCopy(c), "both messages went from the buffer's memory");
            assertEquals(1 + 2, b.refCnt(), "the channel holds the buffer once per message while they are out");

            c.config().setOption(ChannelOption.SO_LINGER, 0);
            c.close().sync();   // abortive: the messages out fail
            awaitOnLoop(c, () -> b.refCnt() == 1, "the channel let go of the buffer as its messages failed");
        } finally {
            release.countDown();
        }
        LocalRegion r = regionOf(b, g.rdma());
        assertTrue(b.release(), "the test's reference is the last one");
        assertGivenBack(r);
        server.close().sync();
        assertNull(got.all.getNow(null));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aBufferSentWithoutACopyIsLetGoWhenItsMessagesCompleted(String provider) throws Exception {
        JrdmaEventLoopGroup g = group(provider);
        int size = 5 * 32 * 1024 + 7;
        Collector got = new Collector(size);
        Channel server = server(g, got, true);
        Channel c = client(g, server);
        ByteBuf b = g.allocator().directBuffer(size).writeZero(size);
        b.retain();
        c.writeAndFlush(b).sync();
        assertEquals(size, got.all.get(T, TimeUnit.SECONDS).length);
        awaitOnLoop(c, () -> b.refCnt() == 1, "the channel let go of the buffer as its messages completed");
        assertTrue(b.release());
        c.close().sync();
        server.close().sync();
    }
}
