package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Access;
import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.RemoteAccessException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Close and revocation under load: writers hammer the region currently exposed while the owner
 * closes it and registers the next one every few milliseconds, and a peer stalls a write into
 * one of them mid-payload. Each region lies between guard pages. Pass: not one byte lands in a
 * region after its {@code close()} returned (its content is snapshotted then, and checked when
 * every write has completed), no write through a closed key succeeds after that, the guard pages
 * never change, and close p99.99 stays under 100 ms. The regions are the application's own
 * memory, which takes the socket path on tcp and shm alike. 15 s by default;
 * {@code -Djrdma.soak.seconds=120} for the two minutes.
 */
class RevocationSoakTest {
    private static final int PAGE = 4096;
    private static final int SLOTS = 64;
    private static final int WRITERS = 8;

    /** A region of one round: its page's slot, its key, and (once closed) what it held then. */
    private record Exposed(int slot, RemoteRegion remote, LocalRegion local, AtomicLong closedAt) {
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(600)
    void nothingLandsAfterCloseAndNoClosedKeyWorksAgain(String provider) throws Exception {
        long seconds = Long.getLong("jrdma.soak.seconds", 15);
        try (Arena arena = Arena.ofShared(); Rdma owner = Rdma.builder().provider(provider).build();
             Rdma writers = Rdma.builder().provider(provider).build()) {
            // SLOTS regions, each a page between guard pages: [guard][region][guard][region]...[guard]
            MemorySegment memory = arena.allocate((2L * SLOTS + 1) * PAGE, PAGE);
            memory.fill((byte) 0x5A);
            RdmaServer l = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            AtomicReference<Exposed> current = new AtomicReference<>(expose(owner, memory, 0));
            // Closed regions, with what they held when close() returned, and when it did.
            List<Exposed> closed = new ArrayList<>();
            List<byte[]> snapshots = new ArrayList<>();
            AtomicLong lateSuccesses = new AtomicLong();
            AtomicLong writes = new AtomicLong(), refusals = new AtomicLong();
            AtomicBoolean running = new AtomicBoolean(true);
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);

            // A peer that starts a 64 KiB write into the current region and stalls after 1000 bytes.
            RawPeer stalled = RawPeer.connect(l.address());
            Exposed first = current.get();
            stalled.writeFully(stalled.request(TcpFrameDescriptor.WRITE, 0, 64 * 1024, first.remote().address(),
                    first.remote().rkey(), 0, 0, 0), 5_000);
            stalled.writeFully(ByteBuffer.allocate(1000), 5_000);

            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int id = w;
                threads.add(Thread.ofPlatform().name("writer-" + w).start(() -> {
                    try (LocalRegion src = writers.allocate(64)) {
                        src.segment().fill((byte) (0x10 + id));
                        Connection c = writers.connect(l.address());
                        while (running.get()) {
                            Exposed e = current.get();
                            long at = ThreadLocalRandom.current().nextInt(PAGE / 64) * 64L;
                            long posted = System.nanoTime();
                            try {
                                c.writeSync(src, e.remote().slice(at, 64));
                                writes.incrementAndGet();
                                long closedAt = e.closedAt().get();
                                if (closedAt != 0 && posted - closedAt > 0) {
                                    lateSuccesses.incrementAndGet();   // posted after close() returned, and it worked
                                }
                            } catch (RemoteAccessException refused) {
                                refusals.incrementAndGet();   // a closed key: RC ends the connection
                                c.close();
                                c = writers.connect(l.address());
                            }
                        }
                        c.close();
                    }
                }));
            }

            long[] closeNanos = new long[200_000];
            int closes = 0;
            int slot = 0;
            while (System.nanoTime() < end && closes < closeNanos.length) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
                slot = (slot + 1) % SLOTS;
                Exposed next = expose(owner, memory, slot);
                Exposed old = current.getAndSet(next);
                long t0 = System.nanoTime();
                old.local().close();
                long returned = System.nanoTime();
                old.closedAt().set(returned);
                closeNanos[closes++] = returned - t0;
                byte[] held = regionOf(memory, old.slot()).toArray(ValueLayout.JAVA_BYTE);
                synchronized (closed) {
                    closed.add(old);
                    snapshots.add(held);
                }
                // A slot is used again only after its old region's check below: keep its bytes.
                if (closed.size() >= SLOTS - 2) {
                    verifyAndForget(memory, closed, snapshots, SLOTS / 2);
                }
            }
            running.set(false);
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(60));
            }
            stalled.close();
            current.get().local().close();
            verifyAndForget(memory, closed, snapshots, closed.size());
            long[] sorted = Arrays.copyOf(closeNanos, closes);
            Arrays.sort(sorted);
            long p9999 = sorted[Math.min(closes - 1, (int) (closes * 0.9999))];
            System.out.println("RevocationSoakTest " + provider + ": " + closes + " closes (p50 "
                    + sorted[closes / 2] / 1000 + " us, p99.99 " + p9999 / 1000 + " us), " + writes.get() + " writes, "
                    + refusals.get() + " refused through closed keys");
            assertEquals(0, lateSuccesses.get(), "writes through a key whose close() had returned succeeded");
            assertTrue(p9999 < TimeUnit.MILLISECONDS.toNanos(100), "close p99.99 " + p9999 / 1000 + " us");
            assertTrue(writes.get() > 1000 && refusals.get() > 0, "the writers wrote (" + writes.get()
                    + ") and met closed keys (" + refusals.get() + ")");
            for (int g = 0; g <= SLOTS; g++) {
                MemorySegment guard = memory.asSlice(2L * g * PAGE, PAGE);
                assertEquals(-1, guard.mismatch(MemorySegment.ofArray(filled(PAGE, (byte) 0x5A))), "guard page " + g);
            }
        }
    }

    /** The first {@code n} closed regions still hold what they held when close() returned; then they are forgotten. */
    private static void verifyAndForget(MemorySegment memory, List<Exposed> closed, List<byte[]> snapshots, int n) {
        synchronized (closed) {
            for (int i = 0; i < n && !closed.isEmpty(); i++) {
                Exposed e = closed.remove(0);
                byte[] held = snapshots.remove(0);
                byte[] now = regionOf(memory, e.slot()).toArray(ValueLayout.JAVA_BYTE);
                if (!Arrays.equals(held, now)) {
                    throw new AssertionError("a write landed in slot " + e.slot() + " after its close() returned");
                }
                regionOf(memory, e.slot()).fill((byte) 0x5A);
            }
        }
    }

    private static Exposed expose(Rdma owner, MemorySegment memory, int slot) {
        LocalRegion r = owner.register(regionOf(memory, slot), Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        return new Exposed(slot, r.toRemote(), r, new AtomicLong());
    }

    private static MemorySegment regionOf(MemorySegment memory, int slot) {
        return memory.asSlice((2L * slot + 1) * PAGE, PAGE);
    }

    private static byte[] filled(int n, byte b) {
        byte[] a = new byte[n];
        Arrays.fill(a, b);
        return a;
    }
}
