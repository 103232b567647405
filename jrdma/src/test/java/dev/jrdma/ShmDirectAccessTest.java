package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.RemoteAccessException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What only shm does: once a peer's region is mapped, one-sided operations on it need no CPU of
 * the target, and memory that is not shareable keeps the tcp path.
 */
class ShmDirectAccessTest {
    private static final long T = 20;

    @Test
    @Timeout(60)
    void afterTheFirstTouchWritesReadsAndAtomicsNeedNoCpuOfTheTarget() throws Exception {
        // The server drives progress itself (INLINE) and stops once the region is mapped.
        try (Rdma server = Rdma.builder().provider("shm").ioThreads(Rdma.INLINE).build();
             Rdma client = Rdma.builder().provider("shm").completionMode(CompletionMode.POLLING).build()) {
            LocalRegion exposed = server.allocate(8192);
            AtomicReference<Connection> accepted = new AtomicReference<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), accepted::set);
            CompletableFuture<Connection> cf = client.connectAsync(l.address(), ConnectionConfig.defaults());
            LocalRegion buf = client.allocate(64);
            RemoteRegion rr = exposed.toRemote();
            // First touch: goes over the socket while the mapping is asked for; the server polls.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Connection c = null;
            CompletableFuture<Void> first = null;
            while (System.nanoTime() < deadline) {
                server.poll();
                if (c == null && cf.isDone()) {
                    c = cf.get();
                    first = c.write(buf, rr.slice(0, 64));
                }
                if (first != null && first.isDone()) {
                    break;
                }
            }
            first.get(0, TimeUnit.SECONDS);
            Connection conn = c;
            for (int i = 0; i < 1000; i++) {   // the map answer is on its way: let it land
                server.poll();
            }
            // From here on the server never polls again.
            for (int i = 0; i < 200; i++) {
                buf.segment().fill((byte) i);
                c.writeSync(buf, rr.slice(64 * (i % 100), 64));
                assertEquals((byte) i, exposed.segment().get(ValueLayout.JAVA_BYTE, 64L * (i % 100) + 63));
            }
            exposed.segment().asSlice(4096, 64).fill((byte) 0x5a);
            LocalRegion back = client.allocate(64);
            c.readSync(rr.slice(4096, 64), back);
            byte[] want = new byte[64];
            java.util.Arrays.fill(want, (byte) 0x5a);
            assertArrayEquals(want, back.segment().toArray(ValueLayout.JAVA_BYTE));
            RemoteRegion word = rr.slice(8000, 8);
            assertEquals(0L, c.fetchAndAddSync(word, 7));
            assertEquals(7L, c.compareAndSwapSync(word, 7, 99));
            assertEquals(99L, exposed.segment().get(ValueLayout.JAVA_LONG, 8000));
            // Out of bounds of the mapped region: refused like the target would, and the connection is in error.
            RemoteRegion beyond = RemoteRegion.of(rr.address() + 8192 - 8, 64, rr.rkey());
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> conn.write(buf, beyond).get(T, TimeUnit.SECONDS));
            RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, e.getCause());
            assertEquals("IBV_WC_REM_ACCESS_ERR", rae.status());
            assertEquals(ConnectionState.ERROR, c.state());
        }
    }

    @Test
    @Timeout(60)
    void memoryThatIsNotShareableKeepsTheTcpPath() throws Exception {
        try (Rdma server = Rdma.builder().provider("shm").build();
             Rdma client = Rdma.builder().provider("shm").build();
             Arena arena = Arena.ofShared()) {
            MemorySegment own = arena.allocate(4096, 64);   // the user's memory: not a memfd
            LocalRegion mine = server.register(own, Access.values());
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), x -> { });
            try (Connection c = client.connect(l.address())) {
                LocalRegion buf = client.allocate(16);
                for (int i = 0; i < 50; i++) {
                    buf.segment().fill((byte) (i + 1));
                    c.writeSync(buf, mine.toRemote().slice(16 * i, 16));
                    assertEquals((byte) (i + 1), own.get(ValueLayout.JAVA_BYTE, 16L * i + 15));
                }
                assertEquals(0L, c.fetchAndAddSync(mine.toRemote().slice(4088, 8), 3));
                assertEquals(3L, own.get(ValueLayout.JAVA_LONG, 4088));
                assertTrue(c.state() == ConnectionState.ESTABLISHED);
            }
        }
    }

    /**
     * A peer reaches an exposed region without the owner's CPU, so closing it cannot stop a
     * write of the peer's already on its way: the pool keeps the memory back until the peer
     * says it unmapped it, and no region lent meanwhile sees that write.
     */
    @Test
    @Timeout(60)
    void aClosedRegionIsNotLentAgainUntilThePeerLetGoOfIt() throws Exception {
        long size = 64 << 10;   // a class the pool does not cache per thread: freed to its shared stack
        try (Rdma server = Rdma.builder().provider("shm").ioThreads(Rdma.INLINE).build();
             Rdma client = Rdma.builder().provider("shm").ioThreads(Rdma.INLINE).build()) {
            LocalRegion exposed = server.allocate(size);
            long at = exposed.address();
            RemoteRegion rr = exposed.toRemote();
            AtomicReference<Connection> accepted = new AtomicReference<>();
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), accepted::set);
            CompletableFuture<Connection> cf = client.connectAsync(l.address(), ConnectionConfig.defaults());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (!(cf.isDone() && accepted.get() != null) && System.nanoTime() < deadline) {
                server.poll();
                client.poll();
            }
            Connection c = cf.get(0, TimeUnit.SECONDS);
            LocalRegion buf = client.allocate(64);
            buf.segment().fill((byte) 7);
            // The first touch maps the region (both sides polled), the second goes direct.
            CompletableFuture<Void> first = c.write(buf, rr.slice(0, 64));
            while (!first.isDone() && System.nanoTime() < deadline) {
                server.poll();
                client.poll();
            }
            first.get(0, TimeUnit.SECONDS);
            for (int i = 0; i < 1000; i++) {
                server.poll();
                client.poll();
            }
            CompletableFuture<Void> direct = c.write(buf, rr.slice(64, 64));
            client.poll();
            direct.get(0, TimeUnit.SECONDS);
            // The owner closes it; the client has not read the unmap yet (it does not poll).
            exposed.close();
            LocalRegion meanwhile = server.allocate(size);
            assertTrue(meanwhile.address() != at, "lent again before the peer let go");
            CompletableFuture<Void> late = c.write(buf, rr.slice(128, 64));   // still mapped at the peer: lands in the old block
            client.poll();
            late.get(0, TimeUnit.SECONDS);
            assertEquals(-1, meanwhile.segment().mismatch(MemorySegment.ofArray(new byte[(int) size])), "the new region untouched");
            meanwhile.close();
            // The client reads the unmap and answers; the server reads the answer: the block comes back.
            boolean back = false;
            while (!back && System.nanoTime() < deadline) {
                client.poll();
                server.poll();
                LocalRegion probe = server.allocate(size);
                back = probe.address() == at;
                if (back) {
                    for (long i = 0; i < size; i += 512) {
                        assertEquals(0, probe.segment().get(ValueLayout.JAVA_BYTE, i), "zeroed when lent again");
                    }
                }
                probe.close();
            }
            assertTrue(back, "the block came back once the peer let go");
            // And the peer's access to it now fails.
            CompletableFuture<Void> after = c.write(buf, rr.slice(0, 64));
            while (!after.isDone() && System.nanoTime() < deadline) {
                client.poll();
                server.poll();
            }
            ExecutionException e = assertThrows(ExecutionException.class, () -> after.get(0, TimeUnit.SECONDS));
            assertInstanceOf(RemoteAccessException.class, e.getCause());
        }
    }
}
