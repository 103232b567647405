package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Access;
import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Close never waits for a peer: a WRITE whose payload a peer stalls after 1000 bytes does not
 * hold {@code LocalRegion.close()} (0.1 spun until the peer finished or the socket died, and
 * forever from a callback on the IO thread). The rest of the payload, when it comes, lands
 * nowhere, and the write is refused with a remote access error, as on verbs.
 */
class RegionCloseTest {
    private static final int SIZE = 1 << 20;
    private static final int FIRST = 1000;

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void closingARegionWhileAPeerStallsAWriteIntoItReturnsAtOnce(String provider) throws Exception {
        stalledWrite(provider, false);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void closingItFromACallbackOnTheIoThreadReturnsAtOnceToo(String provider) throws Exception {
        stalledWrite(provider, true);
    }

    /**
     * A READ answer is sent on from the region as the peer reads it (not copied whole), so
     * closing the region while a peer reads it slowly must end that READ: close() returns at
     * once, not one byte leaves after it (the bytes are changed then, and the peer sees none of
     * the new ones), and the connection ends before the whole answer went.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void closingARegionWhileAPeerReadsItSlowlyEndsThatRead(String provider) throws Exception {
        int size = 64 << 20;
        try (Arena arena = Arena.ofShared(); Rdma server = Rdma.builder().provider(provider).build()) {
            MemorySegment memory = arena.allocate(size, 4096);
            memory.fill((byte) 0x5A);
            LocalRegion region = server.register(memory, Access.LOCAL_WRITE, Access.REMOTE_READ);
            RemoteRegion rr = region.toRemote();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            try (RawPeer p = RawPeer.connect(l.address())) {
                p.writeFully(p.request(TcpFrameDescriptor.READ_REQUEST, 0, 0, rr.address(), rr.rkey(), 0, size, 0),
                        5_000);
                ByteBuffer header = ByteBuffer.wrap(p.readFully(TcpFrameDescriptor.HEADER_SIZE, 5_000))
                        .order(java.nio.ByteOrder.LITTLE_ENDIAN);
                assertEquals(TcpFrameDescriptor.READ_RESPONSE, header.get(0), "the READ is being answered");
                long t0 = System.nanoTime();
                region.close();
                long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(millis < 1_000, "close() took " + millis + " ms while the peer read slowly");
                memory.fill((byte) 0x77);   // what a send after close() would carry
                long got = 0;
                ByteBuffer chunk = ByteBuffer.allocate(1 << 20);
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); System.nanoTime() < end; ) {
                    chunk.clear();
                    int r;
                    try {
                        r = p.channel.read(chunk);
                    } catch (java.io.IOException reset) {
                        r = -1;
                    }
                    if (r < 0) {
                        break;
                    }
                    for (int i = 0; i < r && got + i < size; i++) {
                        if (chunk.get(i) != 0x5A) {
                            throw new AssertionError("byte " + (got + i) + " of the answer left after close() returned");
                        }
                    }
                    got += r;
                }
                assertTrue(got < size, "the connection ended before the whole answer went (" + got + " of " + size
                        + " bytes came)");
                assertTrue(p.closedWithin(1_000), "the connection ended");
            }
        }
    }

    private static void stalledWrite(String provider, boolean fromCallback) throws Exception {
        try (Arena arena = Arena.ofShared(); Rdma server = Rdma.builder().provider(provider).ioThreads(1).build();
             Rdma client = Rdma.builder().provider(provider).build()) {
            MemorySegment memory = arena.allocate(SIZE, 4096);
            memory.fill((byte) 0x5A);
            LocalRegion region = server.register(memory, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            RemoteRegion rr = region.toRemote();
            CompletableFuture<Long> closeNanos = new CompletableFuture<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c ->
                    c.onReceive((conn, m) -> {   // the IO thread: the one that places the stalled payload
                        long t0 = System.nanoTime();
                        region.close();
                        closeNanos.complete(System.nanoTime() - t0);
                    }));
            try (RawPeer p = RawPeer.connect(l.address())) {
                p.writeFully(p.request(TcpFrameDescriptor.WRITE, TcpFrameDescriptor.FLAG_ACK_REQUESTED, SIZE, rr.address(),
                        rr.rkey(), 0, 0, 0), 5_000);
                byte[] first = new byte[FIRST];
                Arrays.fill(first, (byte) 0x11);
                p.writeFully(ByteBuffer.wrap(first), 5_000);
                // The first bytes land; then the peer stalls.
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                     memory.get(ValueLayout.JAVA_BYTE, FIRST - 1) != 0x11 && System.nanoTime() < end; ) {
                    Thread.onSpinWait();
                }
                assertEquals(0x11, memory.get(ValueLayout.JAVA_BYTE, FIRST - 1), "the first 1000 bytes landed");
                if (fromCallback) {
                    try (Connection other = client.connect(l.address()); LocalRegion msg = client.allocate(8)) {
                        other.sendSync(msg);
                    }
                } else {
                    long t0 = System.nanoTime();
                    region.close();
                    closeNanos.complete(System.nanoTime() - t0);
                }
                long millis = TimeUnit.NANOSECONDS.toMillis(closeNanos.get(10, TimeUnit.SECONDS));
                assertTrue(millis < 1_000, "close() took " + millis + " ms while the peer stalled the write");
                // The rest comes now: it must land nowhere, and the write is refused.
                byte[] rest = new byte[SIZE - FIRST];
                Arrays.fill(rest, (byte) 0x22);
                p.writeFully(ByteBuffer.wrap(rest), 10_000);
                ByteBuffer nak = p.awaitFrame(TcpFrameDescriptor.NAK, 10_000);
                assertNotNull(nak, "the write was refused");
                assertEquals(WorkCompletion.REM_ACCESS_ERR, Short.toUnsignedInt(nak.getShort(2)));
                for (long i = FIRST; i < SIZE; i++) {
                    if (memory.get(ValueLayout.JAVA_BYTE, i) != 0x5A) {
                        throw new AssertionError("byte " + i + " was written after close() returned");
                    }
                }
            }
        }
    }
}
