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
