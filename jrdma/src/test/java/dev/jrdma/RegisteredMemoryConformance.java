package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.runtime.CompletionMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Registered memory on every transport: regions lent by the pool, what peers may do with them
 * (exposures, rights, the builder's limit), revocation on close, and slices that never outlive
 * their parent.
 */
abstract class RegisteredMemoryConformance {
    protected abstract Transport transport();

    private static final long T = 20;

    private static Throwable cause(CompletableFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(T, TimeUnit.SECONDS));
        return e.getCause();
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void pooledRegionsOfEverySizeAreZeroedAndReachedByThePeer() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            for (int size : new int[] {1, 64, 4096, 100_000, 1 << 20, 3 << 20}) {
                LocalRegion target = p.server().allocate(size);
                for (long i = 0; i < size; i += Math.max(1, size / 64)) {
                    assertEquals(0, target.segment().get(ValueLayout.JAVA_BYTE, i), size + " bytes: byte " + i + " zeroed");
                }
                RemoteRegion rr = RemoteRegion.fromDescriptor(target.toRemote().toDescriptor());
                assertEquals(size, rr.length());
                LocalRegion src = p.client().allocate(size);
                byte[] data = pattern(size, size);
                MemorySegment.copy(MemorySegment.ofArray(data), 0, src.segment(), 0, size);
                p.conn().writeSync(src, rr);
                assertArrayEquals(data, target.segment().toArray(ValueLayout.JAVA_BYTE), size + " bytes written");
                LocalRegion back = p.client().allocateUninitialized(size);
                p.conn().readSync(rr, back);
                assertEquals(-1, back.segment().mismatch(src.segment()), size + " bytes read back");
                target.close();
                src.close();
                back.close();
                // The same class again: whatever the last user wrote, allocate gives zeroes.
                LocalRegion again = p.server().allocate(size);
                assertEquals(-1, again.segment().mismatch(MemorySegment.ofArray(new byte[size])), size + " bytes zeroed on reuse");
                again.close();
            }
        }
    }

    @Test
    void closingARegionRevokesWhatPeersWereGiven() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            LocalRegion target = p.server().allocate(4096);
            RemoteRegion rr = RemoteRegion.fromDescriptor(target.toRemote().toDescriptor());
            LocalRegion src = p.client().allocate(64);
            p.conn().writeSync(src, rr.slice(0, 64));
            target.close();
            // verbs and tcp refuse the very next access; a same-host peer stops once it has
            // handled the unmap the close sent (its writes until then land in memory the pool
            // keeps back until the peer says it let go).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Throwable refused = null;
            for (int i = 0; refused == null && System.nanoTime() < deadline; i++) {
                CompletableFuture<Void> w = p.conn().write(src, rr.slice(0, 64));
                try {
                    w.get(T, TimeUnit.SECONDS);
                    assertTrue(transport().provider().equals("shm"), "write " + i + " after close succeeded on " + transport().provider());
                    Thread.sleep(1);
                } catch (ExecutionException e) {
                    refused = e.getCause();
                }
            }
            RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, refused);
            assertEquals("IBV_WC_REM_ACCESS_ERR", rae.status());
            assertEquals(ConnectionState.ERROR, p.conn().state());
        }
    }

    @Test
    void aPeerGetsOnlyTheRightsGrantedAndTheDeviceHoldsItToThem() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            LocalRegion target = p.server().allocate(4096);
            target.segment().set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            RemoteRegion readOnly = RemoteRegion.fromDescriptor(target.toRemote(Access.REMOTE_READ).toDescriptor());
            assertTrue(readOnly.allows(Access.REMOTE_READ));
            assertFalse(readOnly.allows(Access.REMOTE_WRITE));
            assertFalse(readOnly.allows(Access.REMOTE_ATOMIC));
            LocalRegion buf = p.client().allocate(8);
            p.conn().readSync(readOnly.slice(0, 8), buf);
            assertEquals(0x1122334455667788L, buf.segment().get(ValueLayout.JAVA_LONG, 0));
            // The descriptor says no: refused before posting, the connection stays up.
            assertInstanceOf(RemoteAccessException.class, cause(p.conn().write(buf, readOnly.slice(0, 8))));
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            // Without it (a raw triple), the owner's side refuses: its rkey is read-only.
            RemoteRegion raw = RemoteRegion.of(readOnly.address(), 8, readOnly.rkey());
            RemoteAccessException e = assertInstanceOf(RemoteAccessException.class, cause(p.conn().fetchAndAdd(raw, 1)));
            assertEquals("IBV_WC_REM_ACCESS_ERR", e.status());
            assertEquals(0x1122334455667788L, target.segment().get(ValueLayout.JAVA_LONG, 0), "untouched");
            assertThrows(IllegalArgumentException.class, () -> target.toRemote(Access.LOCAL_WRITE));
        }
    }

    @Test
    void maxRemoteAccessBoundsEveryRegionOfTheInstance() throws Exception {
        Transport t = transport();
        try (Rdma server = t.server().maxRemoteAccess(Access.REMOTE_READ).build();
             Rdma client = t.client().build();
             Arena arena = Arena.ofShared()) {
            LocalRegion target = server.allocate(64);
            RemoteRegion rr = target.toRemote();
            assertTrue(rr.allows(Access.REMOTE_READ));
            assertFalse(rr.allows(Access.REMOTE_WRITE), "the builder's limit, not all rights");
            IllegalArgumentException beyond = assertThrows(IllegalArgumentException.class,
                    () -> target.toRemote(Access.REMOTE_READ, Access.REMOTE_WRITE));
            assertTrue(beyond.getMessage().contains("REMOTE_WRITE") && beyond.getMessage().contains("maxRemoteAccess"),
                    beyond.getMessage());
            IllegalArgumentException reg = assertThrows(IllegalArgumentException.class,
                    () -> server.register(arena.allocate(64, 64), Access.LOCAL_WRITE, Access.REMOTE_ATOMIC));
            assertTrue(reg.getMessage().contains("REMOTE_ATOMIC") && reg.getMessage().contains("maxRemoteAccess"), reg.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Rdma.builder().maxRemoteAccess(Access.LOCAL_WRITE));
            // A peer that ignores the descriptor is refused by the owner's side.
            RdmaServer listener = server.listen(t.nextServerAddress(), c -> { });
            try (Connection c = client.connect(listener.address())) {
                LocalRegion buf = client.allocate(8);
                buf.segment().set(ValueLayout.JAVA_LONG, 0, -1L);
                RemoteRegion raw = RemoteRegion.of(rr.address(), 8, rr.rkey());
                assertInstanceOf(RemoteAccessException.class, cause(c.write(buf, raw)));
                assertEquals(0L, target.segment().get(ValueLayout.JAVA_LONG, 0), "untouched");
            }
        }
    }

    @Test
    void slicesNeverOutliveTheirParentAndStayInBounds() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            LocalRegion parent = p.client().allocate(256);
            LocalRegion slice = parent.slice(64, 64);
            assertEquals(parent.address() + 64, slice.address());
            assertThrows(IndexOutOfBoundsException.class, () -> parent.slice(200, 100));
            assertThrows(IndexOutOfBoundsException.class, () -> slice.slice(0, 65));
            assertThrows(IndexOutOfBoundsException.class, () -> p.remote().slice(8000, 200));
            slice.close();   // a slice owns nothing: the parent stays
            parent.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
            parent.close();
            parent.close();   // idempotent
            for (LocalRegion r : new LocalRegion[] {parent, slice}) {
                IllegalStateException e = assertThrows(IllegalStateException.class, r::segment);
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
                assertThrows(IllegalStateException.class, () -> r.slice(0, 8));
                assertThrows(IllegalStateException.class, r::toRemote);
                Throwable op = cause(p.conn().write(r, p.remote().slice(0, r.length())));
                assertInstanceOf(IllegalArgumentException.class, op);
                assertTrue(op.getMessage().contains("closed"), op.getMessage());
            }
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                    () -> p.client().register(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
            assertTrue(heap.getMessage().contains("heap"), heap.getMessage());
            assertThrows(IllegalArgumentException.class, () -> p.client().allocate(0));
            assertThrows(IllegalArgumentException.class, () -> p.client().allocateUninitialized(-1));
        }
    }

    @Test
    void closingTheInstanceEndsItsRegions() throws Exception {
        Transport t = transport();
        Rdma rdma = t.server().build();
        LocalRegion small = rdma.allocate(64);
        LocalRegion large = rdma.allocate(2 << 20);
        LocalRegion slice = small.slice(0, 8);
        rdma.close();
        for (LocalRegion r : new LocalRegion[] {small, large, slice}) {
            assertThrows(IllegalStateException.class, r::segment);
        }
        assertThrows(RuntimeException.class, () -> rdma.allocate(64));
    }
}
