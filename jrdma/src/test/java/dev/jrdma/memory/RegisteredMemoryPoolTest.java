package dev.jrdma.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.provider.shm.ShmProvider;
import dev.jrdma.provider.tcp.TcpProvider;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The pool on the software devices: tcp (memory of its own) and shm (memfds). */
class RegisteredMemoryPoolTest {
    private static final int ACCESS = AccessFlags.LOCAL_WRITE;

    private static Device open(String provider) {
        return provider.equals("shm") ? new ShmProvider().open(null) : new TcpProvider().open(null);
    }

    @Test
    void sizeClassesArePowersOfTwoFrom64BytesTo1MiB() {
        assertEquals(15, SizeClasses.COUNT);
        assertEquals(0, SizeClasses.classOf(1));
        assertEquals(0, SizeClasses.classOf(64));
        assertEquals(1, SizeClasses.classOf(65));
        assertEquals(1, SizeClasses.classOf(128));
        assertEquals(6, SizeClasses.classOf(4096));
        assertEquals(7, SizeClasses.classOf(4097));
        assertEquals(14, SizeClasses.classOf(1 << 20));
        assertEquals(-1, SizeClasses.classOf((1 << 20) + 1));
        for (long size = 1; size <= SizeClasses.MAX; size = size * 3 / 2 + 1) {
            int block = SizeClasses.sizeOf(SizeClasses.classOf(size));
            assertTrue(block >= size && (block <= 64 || block < 2 * size), size + " bytes in a block of " + block);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void blocksAreAlignedRegisteredAndZeroedUnlessAskedNotTo(String provider) {
        try (Device device = open(provider); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            PooledBlock a = pool.allocate(100, true);
            assertEquals(100, a.segment().byteSize());
            assertEquals(128, a.blockSize());
            assertEquals(0, a.segment().address() % 128);
            long lo = a.registration().memory().address();
            assertTrue(a.segment().address() >= lo
                    && a.segment().address() + 100 <= lo + a.registration().memory().byteSize(), "inside its registration");
            a.segment().fill((byte) 0x5a);
            long at = a.segment().address();
            a.close();
            // The thread's cache is a stack: the block just freed comes back first.
            PooledBlock b = pool.allocate(120, true);
            assertEquals(at, b.segment().address());
            for (long i = 0; i < 120; i++) {
                assertEquals(0, b.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " zeroed");
            }
            b.segment().fill((byte) 0x33);
            b.close();
            PooledBlock c = pool.allocate(128, false);
            assertEquals(at, c.segment().address());
            assertEquals(0x33, c.segment().get(ValueLayout.JAVA_BYTE, 119), "uninitialised: not filled again");
            c.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void freedBlocksAreReusedSoTheChunksStayWithinTheHighWaterMark(String provider) {
        try (Device device = open(provider); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            Random r = new Random(42);
            List<PooledBlock> live = new ArrayList<>();
            int[] liveInClass = new int[SizeClasses.COUNT];
            int[] maxInClass = new int[SizeClasses.COUNT];
            for (int step = 0; step < 60_000; step++) {
                if (live.size() < 2000 && (live.isEmpty() || r.nextInt(100) < 52)) {
                    long size = 1 + r.nextInt(r.nextBoolean() ? 256 : 8192);
                    PooledBlock b = pool.allocate(size, false);
                    live.add(b);
                    int c = SizeClasses.classOf(size);
                    maxInClass[c] = Math.max(maxInClass[c], ++liveInClass[c]);
                } else {
                    PooledBlock b = live.remove(r.nextInt(live.size()));
                    liveInClass[SizeClasses.classOf(b.segment().byteSize())]--;
                    b.close();
                }
            }
            // A class needs chunks for its most blocks ever live plus what one thread's cache
            // may hold; anything above that would be memory lost to fragmentation.
            long bound = 0;
            for (int c = 0; c < SizeClasses.COUNT; c++) {
                if (maxInClass[c] > 0) {
                    long perChunk = RegisteredMemoryPool.CHUNK_BYTES / SizeClasses.sizeOf(c);
                    bound += (maxInClass[c] + RegisteredMemoryPool.THREAD_CACHE_BLOCKS + perChunk - 1) / perChunk;
                }
            }
            RegisteredMemoryPool.Stats s = pool.stats();
            assertTrue(s.chunks() <= bound, s.chunks() + " chunks for a high-water mark that needs " + bound);
            live.forEach(PooledBlock::close);
            pool.flushThreadCache();
            s = pool.stats();
            assertEquals(s.blocks(), s.freeInPool(), "every block back in the pool: " + s);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void eightThreadsAllocatingAndFreeingNeverShareABlockAndLoseNone(String provider) throws Exception {
        try (Device device = open(provider); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            ConcurrentHashMap<Long, Integer> owner = new ConcurrentHashMap<>();
            ExecutorService threads = Executors.newFixedThreadPool(8);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int me = t;
                done.add(threads.submit(() -> {
                    start.await();
                    Random r = new Random(me);
                    List<PooledBlock> mine = new ArrayList<>();
                    for (int i = 0; i < 20_000; i++) {
                        if (mine.size() < 64 && (mine.isEmpty() || r.nextBoolean())) {
                            long size = r.nextInt(50) == 0 ? 200_000 + r.nextInt(900_000) : 1 + r.nextInt(16_384);
                            PooledBlock b = pool.allocate(size, true);
                            Integer was = owner.putIfAbsent(b.segment().address(), me);
                            assertNull(was, "block at 0x" + Long.toHexString(b.segment().address()) + " lent to thread "
                                    + was + " and " + me);
                            assertEquals(0, b.segment().get(ValueLayout.JAVA_BYTE, size - 1), "zeroed");
                            b.segment().fill((byte) me);
                            mine.add(b);
                        } else {
                            PooledBlock b = mine.remove(r.nextInt(mine.size()));
                            long size = b.segment().byteSize();
                            // Another thread writing into it would show here.
                            assertEquals(-1, b.segment().asSlice(0, size).mismatch(
                                    java.lang.foreign.MemorySegment.ofArray(filled((int) size, (byte) me))));
                            owner.remove(b.segment().address());
                            b.close();
                        }
                    }
                    for (PooledBlock b : mine) {
                        owner.remove(b.segment().address());
                        b.close();
                    }
                    pool.flushThreadCache();
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
            threads.shutdown();
            assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
            RegisteredMemoryPool.Stats s = pool.stats();
            assertEquals(s.blocks(), s.freeInPool(), "every block back in the pool: " + s);
            assertEquals(0, s.largeBlocks());
        }
    }

    private static byte[] filled(int n, byte b) {
        byte[] a = new byte[n];
        java.util.Arrays.fill(a, b);
        return a;
    }

    @Test
    void aBlockClosedTwiceOrByManyThreadsAtOnceGoesBackOnce() throws Exception {
        try (Device device = open("tcp"); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            PooledBlock first = pool.allocate(64 << 10, false);   // not thread-cached: straight to the pool's stack
            long before = pool.stats().freeInPool();
            first.close();
            first.close();
            assertEquals(before + 1, pool.stats().freeInPool());
            PooledBlock shared = pool.allocate(64 << 10, false);
            before = pool.stats().freeInPool();
            ExecutorService threads = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> all = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                all.add(threads.submit(() -> {
                    go.await();
                    shared.close();
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : all) {
                f.get(10, TimeUnit.SECONDS);
            }
            threads.shutdown();
            assertEquals(before + 1, pool.stats().freeInPool());
            // Every block of the chunk can be lent at once, each at its own address.
            long perChunk = RegisteredMemoryPool.CHUNK_BYTES / (64 << 10);
            Set<Long> addresses = new HashSet<>();
            List<PooledBlock> held = new ArrayList<>();
            for (int i = 0; i < perChunk; i++) {
                PooledBlock b = pool.allocate(64 << 10, false);
                held.add(b);
                assertTrue(addresses.add(b.segment().address()), "lent twice: " + b);
            }
            assertEquals(1, pool.stats().chunks());
            held.forEach(PooledBlock::close);
        }
    }

    @Test
    void largeRequestsHaveARegistrationOfTheirOwnDroppedOnClose() {
        try (Device device = open("tcp"); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            PooledBlock big = pool.allocate(3 << 20, true);
            assertEquals(3 << 20, big.segment().byteSize());
            assertEquals(big.segment().address(), big.registration().memory().address());
            assertEquals(1, pool.stats().largeBlocks());
            assertEquals(0, pool.stats().chunks());
            big.segment().set(ValueLayout.JAVA_LONG, (3 << 20) - 8, 7);
            big.close();
            assertEquals(0, pool.stats().largeBlocks());
            assertThrows(IllegalStateException.class, () -> big.segment().get(ValueLayout.JAVA_LONG, 0),
                    "its memory is freed: the segment refuses");
        }
    }

    @Test
    void aClosedPoolLendsNothingAndItsBlocksCannotBeTouched() {
        PooledBlock lent;
        try (Device device = open("tcp")) {
            RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS);
            lent = pool.allocate(256, false);
            pool.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.allocate(8, true));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> lent.segment().get(ValueLayout.JAVA_BYTE, 0));
            lent.close();   // after the pool: nothing to give back, no failure
            assertThrows(IllegalArgumentException.class, () -> pool.allocate(0, true));
        }
    }

    @Test
    void theCacheOfAThreadThatEndsGoesBackToThePool() throws Exception {
        try (Device device = open("tcp"); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS)) {
            Thread t = new Thread(() -> {
                List<PooledBlock> bs = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    bs.add(pool.allocate(64, false));
                }
                bs.forEach(PooledBlock::close);   // into this thread's cache
            });
            t.start();
            t.join();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            RegisteredMemoryPool.Stats s = pool.stats();
            while (s.freeInPool() != s.blocks() && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
                s = pool.stats();
            }
            assertEquals(s.blocks(), s.freeInPool(), "the ended thread's cached blocks came back: " + s);
            assertNotEquals(0, s.blocks());
        }
    }

    /** Free huge pages of this machine, in bytes (HugePages_Free x Hugepagesize of /proc/meminfo). */
    static long freeHugePageBytes() throws java.io.IOException {
        long free = 0, size = 0;
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/meminfo"))) {
            String[] f = line.split("\\s+");
            if (line.startsWith("HugePages_Free:")) {
                free = Long.parseLong(f[1]);
            } else if (line.startsWith("Hugepagesize:")) {
                size = Long.parseLong(f[1]) * 1024;
            }
        }
        return free * size;
    }

    @Test
    void hugePagesWhenTheKernelHasThemElseNormalPages() throws Exception {
        boolean available = freeHugePageBytes() >= RegisteredMemoryPool.CHUNK_BYTES;
        try (Device device = open("tcp"); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS, true)) {
            PooledBlock b = pool.allocate(4096, true);
            b.segment().fill((byte) 3);
            assertEquals(3, b.segment().get(ValueLayout.JAVA_BYTE, 4095));
            assertEquals(available, pool.hugePagesInUse(), "huge pages free here: " + freeHugePageBytes() + " bytes");
            PooledBlock big = pool.allocate(3 << 20, true);   // a registration of its own: huge pages too, rounded up
            assertEquals(0, big.segment().get(ValueLayout.JAVA_BYTE, (3 << 20) - 1));
            big.close();
            b.close();
        }
        try (Device device = open("shm"); RegisteredMemoryPool pool = new RegisteredMemoryPool(device, ACCESS, true)) {
            pool.allocate(64, true).close();
            assertTrue(!pool.hugePagesInUse(), "shm memory is memfds a peer maps at 4 KiB offsets: normal pages");
        }
    }
}
