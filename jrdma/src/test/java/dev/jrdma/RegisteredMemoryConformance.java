package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.RemoteAccessException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
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
            assertThrows(IllegalArgumentException.class, () -> Rdma.builder().memoryBudget(-1));
            // Software providers pin nothing, and the VM's root has CAP_IPC_LOCK: any budget fits
            // (MemlockVerbsTest shows the refusal under a real limit).
            t.client().memoryBudget(1L << 40).build().close();
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

    /** 0.1: {@code parent.slice(4096, 4096).toRemote()} gave a key that read the parent's first 4096 bytes too. */
    @Test
    void aSliceIsExposedExactlyNotItsParent() throws Exception {
        long[][] probes = {{-1, 1}, {4096, 1}, {0, 4097}, {-4096, 4096}};   // before, after, overrun, the parent's first page
        for (long[] probe : probes) {
            try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
                LocalRegion parent = p.server().allocate(3 * 4096);
                parent.segment().fill((byte) 7);
                RemoteRegion rr = parent.slice(4096, 4096).toRemote(Access.REMOTE_READ);
                assertEquals(parent.address() + 4096, rr.address());
                assertEquals(4096, rr.length());
                LocalRegion into = p.client().allocate(4097);
                p.conn().readSync(rr, into.slice(0, 4096));   // all of the slice: granted
                assertEquals(7, into.segment().get(ValueLayout.JAVA_BYTE, 4095));
                RemoteRegion outside = RemoteRegion.of(rr.address() + probe[0], probe[1], rr.rkey());
                Throwable t = cause(p.conn().read(outside, into.slice(0, probe[1])));
                assertInstanceOf(RemoteAccessException.class, t, "reading [" + probe[0] + ", +" + probe[1]
                        + ") of the slice with its key: " + t);
            }
        }
    }

    /**
     * A region handed to one peer is that peer's alone: a second client of the same server, with
     * the same descriptor, is refused as for a key that names nothing (also on shm, where the
     * second client would otherwise map the region and write it directly); the first one reads
     * and writes. The exposure ends with its connection. Bad input: another Rdma's connection, a
     * closed connection, a closed region. On verbs the key is a type 2B memory window bound on
     * the connection's queue pair (rxe has them).
     */
    @Test
    void aRegionExposedToOneConnectionIsThatPeersAlone() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE);
             Rdma other = transport().client().build()) {
            Connection toFirst = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(toFirst, "the server's side of the first connection");
            LocalRegion target = p.server().allocate(4096);
            target.segment().fill((byte) 5);
            RemoteRegion mine = target.toRemoteFor(toFirst, Access.REMOTE_READ, Access.REMOTE_WRITE);
            RemoteRegion copy = RemoteRegion.fromDescriptor(mine.toDescriptor());
            LocalRegion buf = p.client().allocate(4096);
            p.conn().readSync(copy, buf);
            assertEquals(5, buf.segment().get(ValueLayout.JAVA_BYTE, 4095), "the peer it was given to reads it");
            buf.segment().fill((byte) 6);
            p.conn().writeSync(buf.slice(0, 8), copy.slice(0, 8));
            assertEquals(6, target.segment().get(ValueLayout.JAVA_BYTE, 7), "and writes it");

            try (Connection second = other.connect(p.listener().address())) {
                LocalRegion buf2 = other.allocate(4096);
                buf2.segment().fill((byte) 9);
                Throwable w = cause(second.write(buf2.slice(0, 8), copy.slice(8, 8)));
                assertInstanceOf(RemoteAccessException.class, w, "another peer writing with the descriptor: " + w);
                assertEquals(5, target.segment().get(ValueLayout.JAVA_BYTE, 8), "nothing of the other peer's landed");
                assertEquals(5, target.segment().get(ValueLayout.JAVA_BYTE, 15));
            }
            try (Connection third = other.connect(p.listener().address())) {
                Throwable r = cause(third.read(copy, other.allocate(4096)));
                assertInstanceOf(RemoteAccessException.class, r, "another peer reading with the descriptor: " + r);
            }

            assertThrows(IllegalArgumentException.class, () -> target.toRemoteFor(p.conn()),
                    "a connection of another Rdma (the client's)");
            assertThrows(NullPointerException.class, () -> target.toRemoteFor(null));
            assertEquals(1, target.openLeases());
            LocalRegion brief = p.server().allocate(64);
            brief.toRemoteFor(toFirst);
            assertEquals(2, toFirst.releaseHookCount());
            brief.close();
            assertEquals(1, toFirst.releaseHookCount(), "a region closed first takes its hook off the connection");
            toFirst.closeAsync().get(60, TimeUnit.SECONDS);   // released: its hooks run now (verbs: the disconnect can take seconds)
            assertThrows(dev.jrdma.exceptions.ConnectionClosedException.class, () -> target.toRemoteFor(toFirst));
            for (long until = System.nanoTime() + 10_000_000_000L; target.openLeases() > 0 && System.nanoTime() < until; ) {
                Thread.onSpinWait();
            }
            assertEquals(0, target.openLeases(), "the exposure ended with its connection");
            target.close();
            assertThrows(IllegalStateException.class, () -> target.toRemoteFor(toFirst));
        }
    }

    /**
     * Closing a region exposed to one connection revokes its key at once: the peer that read it
     * a moment before is refused now (on verbs the window is deallocated), and the connection's
     * release hook is gone with it.
     */
    @Test
    void aRegionExposedToOneConnectionIsRevokedWhenItCloses() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            Connection toFirst = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(toFirst, "the server's side of the connection");
            LocalRegion exposed = p.server().allocate(64);
            exposed.segment().fill((byte) 3);
            RemoteRegion given = exposed.toRemoteFor(toFirst, Access.REMOTE_READ);
            LocalRegion probe = p.client().allocate(64);
            p.conn().readSync(given, probe);
            assertEquals(3, probe.segment().get(ValueLayout.JAVA_BYTE, 63), "read while exposed");
            exposed.close();
            assertEquals(0, toFirst.releaseHookCount(), "the closed region's hook left the connection");
            // verbs (the window is deallocated) and tcp refuse the very next access; a same-host
            // peer (shm) once it has handled the unmap the close sent, as for toRemote().
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Throwable late = null;
            for (int i = 0; late == null && System.nanoTime() < deadline; i++) {
                try {
                    p.conn().read(given, probe).get(T, TimeUnit.SECONDS);
                    assertTrue(transport().provider().equals("shm"), "read " + i + " after close succeeded on " + transport().provider());
                } catch (java.util.concurrent.ExecutionException e) {
                    late = e.getCause();
                }
            }
            assertInstanceOf(RemoteAccessException.class, late, "reading after the region closed: " + late);
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

    @Test
    void aLeaseEndsOnTimeAndThePeerIsRefusedAfterIt() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            LocalRegion target = p.server().allocate(4096);
            assertThrows(IllegalArgumentException.class, () -> target.lease(Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> target.lease(Duration.ofMillis(-5)));
            assertThrows(IllegalArgumentException.class, () -> target.lease(Duration.ofSeconds(1), Access.LOCAL_WRITE));
            long before = System.currentTimeMillis();
            RemoteRegion lease = RemoteRegion.fromDescriptor(
                    target.slice(0, 64).lease(Duration.ofMillis(600), Access.REMOTE_READ, Access.REMOTE_WRITE).toDescriptor());
            long end = lease.leaseEnd().orElseThrow().toEpochMilli();
            assertTrue(end >= before + 600 && end <= System.currentTimeMillis() + 600, "ends 600 ms after it was made: " + end);
            assertEquals(64, lease.length());
            assertFalse(lease.allows(Access.REMOTE_ATOMIC));
            LocalRegion buf = p.client().allocate(8);
            buf.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            p.conn().writeSync(buf, lease.slice(0, 8));
            assertEquals(42L, target.segment().get(ValueLayout.JAVA_LONG, 0));
            while (System.currentTimeMillis() <= end + 200) {
                Thread.sleep(20);
            }
            // The descriptor says the lease is over: refused here, the connection stays up.
            Throwable early = cause(p.conn().write(buf, lease.slice(0, 8)));
            assertInstanceOf(RemoteAccessException.class, early);
            assertTrue(early.getMessage().contains("lease ended"), early.getMessage());
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            // A peer that ignores it is refused by the owner's side: the lease's rkey is gone
            // (a same-host peer once it has handled the unmap the end sent).
            RemoteRegion raw = RemoteRegion.of(lease.address(), 8, lease.rkey());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Throwable refused = null;
            while (refused == null && System.nanoTime() < deadline) {
                try {
                    p.conn().write(buf, raw).get(T, TimeUnit.SECONDS);
                    assertTrue(transport().provider().equals("shm"), "a write with an ended lease succeeded on " + transport().provider());
                    Thread.sleep(1);
                } catch (ExecutionException e) {
                    refused = e.getCause();
                }
            }
            assertEquals("IBV_WC_REM_ACCESS_ERR", assertInstanceOf(RemoteAccessException.class, refused).status());
            // The region itself is still the owner's, and so is its memory.
            target.segment().set(ValueLayout.JAVA_LONG, 8, 7);
            assertEquals(7L, target.segment().get(ValueLayout.JAVA_LONG, 8));
        }
    }

    /**
     * A lease for one connection's peer: that peer reads and writes its slice, another peer with
     * the same descriptor is refused, and it ends on time (the key revoked at the owner, its hook
     * off the connection) while a longer one ends with the connection. On verbs it is a memory
     * window bound on the connection's queue pair and deallocated at the end. Bad input: no
     * duration, a connection of another Rdma, a right that is not remote, a closed region.
     */
    @Test
    void aLeaseForOneConnectionIsThatPeersAloneAndEndsOnTime() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE);
             Rdma other = transport().client().build()) {
            Connection toFirst = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(toFirst, "the server's side of the connection");
            LocalRegion target = p.server().allocate(4096);
            target.segment().fill((byte) 5);
            assertThrows(IllegalArgumentException.class, () -> target.leaseFor(toFirst, Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> target.leaseFor(p.conn(), Duration.ofSeconds(1)),
                    "a connection of another Rdma (the client's)");
            assertThrows(IllegalArgumentException.class, () -> target.leaseFor(toFirst, Duration.ofSeconds(1), Access.LOCAL_WRITE));
            assertThrows(NullPointerException.class, () -> target.leaseFor(null, Duration.ofSeconds(1)));

            long before = System.currentTimeMillis();
            RemoteRegion lease = RemoteRegion.fromDescriptor(target.slice(64, 64)
                    .leaseFor(toFirst, Duration.ofMillis(800), Access.REMOTE_READ, Access.REMOTE_WRITE).toDescriptor());
            RemoteRegion longer = target.slice(0, 64).leaseFor(toFirst, Duration.ofMinutes(10), Access.REMOTE_READ);
            long end = lease.leaseEnd().orElseThrow().toEpochMilli();
            assertTrue(end >= before + 800 && end <= System.currentTimeMillis() + 800, "ends 800 ms after it was made: " + end);
            assertEquals(64, lease.length());
            assertFalse(lease.allows(Access.REMOTE_ATOMIC));
            LocalRegion buf = p.client().allocate(64);
            buf.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            p.conn().writeSync(buf.slice(0, 8), lease.slice(0, 8));
            assertEquals(42L, target.segment().get(ValueLayout.JAVA_LONG, 64), "the peer it was given to writes it");
            p.conn().readSync(longer, buf);
            assertEquals(5, buf.segment().get(ValueLayout.JAVA_BYTE, 63), "and reads the other lease");
            try (Connection second = other.connect(p.listener().address())) {
                Throwable r = cause(second.read(lease.slice(0, 8), other.allocate(8)));
                assertInstanceOf(RemoteAccessException.class, r, "another peer reading with the descriptor: " + r);
            }
            assertEquals(2, target.openLeases());
            assertEquals(2, toFirst.releaseHookCount());

            // Its time is up: the owner's side revokes it and takes its hook off the connection.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while ((target.openLeases() > 1 || toFirst.releaseHookCount() > 1) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, target.openLeases(), "the lease ended on time, the longer one is open");
            assertEquals(1, toFirst.releaseHookCount(), "the ended lease's hook left the connection");
            assertTrue(System.currentTimeMillis() >= end - 50, "not before its end");
            Throwable early = cause(p.conn().write(buf.slice(0, 8), lease.slice(0, 8)));
            assertInstanceOf(RemoteAccessException.class, early);
            assertTrue(early.getMessage().contains("lease ended"), early.getMessage());
            p.conn().readSync(longer, buf);   // the longer lease still works, the connection is up
            // A peer that ignores the descriptor's end is refused by the owner's side: the key is
            // revoked (verbs: the window deallocated; a same-host peer once it has handled the
            // unmap the end sent). On verbs the refusal ends the connection, as a wrong key does.
            RemoteRegion raw = RemoteRegion.of(lease.address(), 8, lease.rkey());
            long refusedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Throwable refused = null;
            while (refused == null && System.nanoTime() < refusedBy) {
                try {
                    p.conn().write(buf.slice(0, 8), raw).get(T, TimeUnit.SECONDS);
                    assertTrue(transport().provider().equals("shm"), "a write with an ended lease's key succeeded on "
                            + transport().provider());
                    Thread.sleep(1);
                } catch (ExecutionException e) {
                    refused = e.getCause();
                }
            }
            assertEquals("IBV_WC_REM_ACCESS_ERR", assertInstanceOf(RemoteAccessException.class, refused).status());

            // The longer lease ends with its connection.
            toFirst.closeAsync().get(60, TimeUnit.SECONDS);
            for (long until = System.nanoTime() + 10_000_000_000L; target.openLeases() > 0 && System.nanoTime() < until; ) {
                Thread.onSpinWait();
            }
            assertEquals(0, target.openLeases(), "the longer lease ended with its connection");
            assertThrows(dev.jrdma.exceptions.ConnectionClosedException.class, () -> target.leaseFor(toFirst, Duration.ofSeconds(1)));
            target.close();
            assertThrows(IllegalStateException.class, () -> target.leaseFor(toFirst, Duration.ofSeconds(1)));
        }
    }

    @Test
    void regionsTravelAsMessagesAndWhatIsNotADescriptorIsRefused() throws Exception {
        Transport t = transport();
        try (Rdma server = t.server().build(); Rdma client = t.client().build()) {
            java.util.concurrent.LinkedBlockingQueue<Connection> accepted = new java.util.concurrent.LinkedBlockingQueue<>();
            RdmaServer listener = server.listen(t.nextServerAddress(), accepted::add);
            try (Connection c = client.connect(listener.address())) {
                Connection s = accepted.poll(T, TimeUnit.SECONDS);
                LocalRegion target = server.allocate(256);
                s.sendRegion(target).get(T, TimeUnit.SECONDS);
                RemoteRegion got = c.receiveRegion().get(T, TimeUnit.SECONDS);
                assertEquals(target.toRemote(), got);
                LocalRegion buf = client.allocate(256);
                buf.segment().fill((byte) 0x6b);
                c.writeSync(buf, got);
                assertEquals(-1, target.segment().mismatch(buf.segment()));
                // A lease travels with its end.
                RemoteRegion lease = target.lease(Duration.ofMinutes(1), Access.REMOTE_READ);
                s.sendRegion(lease).get(T, TimeUnit.SECONDS);
                assertEquals(lease.leaseEnd(), c.receiveRegion().get(T, TimeUnit.SECONDS).leaseEnd());
                // Not descriptors: each refused with what is wrong, and the connection goes on.
                LocalRegion junk = client.allocate(40);
                junk.segment().fill((byte) 1);
                c.sendSync(junk);
                Throwable magic = cause(s.receiveRegion());
                assertInstanceOf(IllegalArgumentException.class, magic);
                assertTrue(magic.getMessage().contains("magic"), magic.getMessage());
                c.sendSync(client.allocate(100));
                Throwable size = cause(s.receiveRegion());
                assertTrue(size.getMessage().contains("100 bytes is not a remote region descriptor"), size.getMessage());
                byte[] truncated = java.util.Arrays.copyOf(got.toDescriptor(), 20);
                LocalRegion cut = client.allocate(20);
                MemorySegment.copy(MemorySegment.ofArray(truncated), 0, cut.segment(), 0, 20);
                c.sendSync(cut);
                Throwable shortOne = cause(s.receiveRegion());
                assertTrue(shortOne.getMessage().contains("32 bytes, not 20"), shortOne.getMessage());
                c.sendRegion(buf).get(T, TimeUnit.SECONDS);
                assertEquals(buf.toRemote(), s.receiveRegion().get(T, TimeUnit.SECONDS));
                assertEquals(ConnectionState.ESTABLISHED, c.state());
                assertEquals(ConnectionState.ESTABLISHED, s.state());
            }
        }
    }

    @Test
    void onDemandPagingAndPhysicalAddressesOnlyWhereTheDeviceHasThem() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE); Arena arena = Arena.ofShared()) {
            Rdma server = p.server();
            String device = server.deviceName();
            MemorySegment mine = arena.allocate(1 << 16, 4096);
            if (server.capabilities().odp()) {
                LocalRegion odp = server.registerOnDemand(mine, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
                LocalRegion buf = p.client().allocate(64);
                buf.segment().fill((byte) 9);
                p.conn().writeSync(buf, RemoteRegion.fromDescriptor(odp.toRemote().toDescriptor()).slice(4096, 64));
                assertEquals(9, mine.get(ValueLayout.JAVA_BYTE, 4096 + 63), "written through an ODP registration");
                odp.close();
            } else {
                var e = assertThrows(dev.jrdma.exceptions.UnsupportedCapabilityException.class,
                        () -> server.registerOnDemand(mine, Access.LOCAL_WRITE, Access.REMOTE_WRITE));
                assertEquals("on-demand paging", e.capability());
                assertEquals(device, e.device());
                assertTrue(e.getMessage().contains(device), e.getMessage());
                var implicit = assertThrows(dev.jrdma.exceptions.UnsupportedCapabilityException.class,
                        server::registerAddressSpaceOnDemand);
                assertEquals("implicit on-demand paging", implicit.capability());
                assertEquals(device, implicit.device());
            }
            var pa = assertThrows(dev.jrdma.exceptions.UnsupportedCapabilityException.class,
                    () -> server.registerPhysical(0x1000_0000L, 4096, Access.LOCAL_WRITE));
            assertEquals("physical-address memory regions", pa.capability());
            assertTrue(pa.getMessage().contains(device), pa.getMessage());
            assertThrows(IllegalArgumentException.class, () -> server.registerPhysical(0x1000_0000L, 0));
            assertThrows(IllegalArgumentException.class,
                    () -> server.registerOnDemand(MemorySegment.ofArray(new byte[8]), Access.LOCAL_WRITE));
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
        }
    }

    @Test
    void registeringTheSameRangeTwiceSharesOneRegistrationUntilTheLastCloses() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE); Arena arena = Arena.ofShared()) {
            MemorySegment mine = arena.allocate(4096, 4096);
            Access[] rw = {Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ};
            LocalRegion first = p.server().register(mine, rw);
            LocalRegion second = p.server().register(mine, rw);
            assertEquals(first.lkey(), second.lkey(), "one registration");
            assertEquals(first.rkey(), second.rkey());
            LocalRegion readOnly = p.server().register(mine, Access.REMOTE_READ);
            assertTrue(readOnly.rkey() != first.rkey(), "other access: a registration of its own");
            readOnly.close();
            RemoteRegion rr = RemoteRegion.fromDescriptor(first.toRemote().toDescriptor());
            first.close();
            // The other region still holds it: the peer's write lands.
            LocalRegion buf = p.client().allocate(8);
            buf.segment().set(ValueLayout.JAVA_LONG, 0, 77);
            p.conn().writeSync(buf, rr.slice(0, 8));
            assertEquals(77L, mine.get(ValueLayout.JAVA_LONG, 0));
            assertThrows(IllegalStateException.class, first::segment);
            second.close();
            // The last one closed: the rkey is revoked.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            Throwable refused = null;
            while (refused == null && System.nanoTime() < deadline) {
                try {
                    p.conn().write(buf, rr.slice(0, 8)).get(T, TimeUnit.SECONDS);
                    assertTrue(transport().provider().equals("shm"), "a write after the last close succeeded on " + transport().provider());
                    Thread.sleep(1);
                } catch (ExecutionException e) {
                    refused = e.getCause();
                }
            }
            assertInstanceOf(RemoteAccessException.class, refused);
        }
    }
}
