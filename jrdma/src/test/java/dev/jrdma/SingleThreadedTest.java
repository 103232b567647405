package dev.jrdma;

import dev.jrdma.runtime.CompletionMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Rdma.Builder.singleThreaded}: the client's operation path takes no lock, so what it
 * promises is checked here on tcp and shm. On its owner every operation works as on a shared
 * instance; from another thread posting, polling and closing a message are refused with an
 * exception naming both threads, and nothing is posted or lost by the refusal.
 */
class SingleThreadedTest {
    private static final long T = 30;

    private static TestPair open(String provider, ConnectionConfig clientConfig) {
        Transport t = provider.equals("tcp") ? Transport.tcp() : Transport.shm();
        return TestPair.open(t, CompletionMode.POLLING, ConnectionConfig.defaults(), clientConfig,
                b -> b.ioThreads(Rdma.INLINE).singleThreaded(true));
    }

    /** Polls the single-threaded client until {@code f} is done (nobody else drives it). */
    private static <V> V await(TestPair p, Future<V> f) throws Exception {
        pollUntil(p, f::isDone);
        return f.get();
    }

    /** Runs {@code call} on a thread of its own and returns what it threw (null: nothing). */
    private static Throwable onAnotherThread(Runnable call) throws InterruptedException {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread th = Thread.ofPlatform().name("not-the-owner").start(() -> {
            try {
                call.run();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        th.join(TimeUnit.SECONDS.toMillis(T));
        assertFalse(th.isAlive(), "the other thread's call returned");
        return thrown.get();
    }

    private static void assertNamesBothThreads(Throwable e) {
        assertInstanceOf(IllegalStateException.class, e, String.valueOf(e));
        assertTrue(e.getMessage().contains("not-the-owner") && e.getMessage().contains(Thread.currentThread().getName())
                && e.getMessage().contains("singleThreaded"), e.getMessage());
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void everyOperationWorksOnTheOwner(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion r = p.remote();
            LocalRegion out = p.client().allocate(1000), in = p.client().allocate(1000);
            out.segment().copyFrom(MemorySegment.ofArray(pattern(1000, 1)));
            c.writeSync(out, r.slice(0, 1000));
            c.readSync(r.slice(0, 1000), in);
            assertArrayEquals(pattern(1000, 1), in.segment().toArray(ValueLayout.JAVA_BYTE));

            RemoteRegion word = r.slice(4096, 8);
            assertEquals(0, c.fetchAndAddSync(word, 5));
            assertEquals(5, c.compareAndSwapSync(word, 5, 9));
            // Emulated where the provider has no masked atomics: the next attempts post from the completion.
            assertEquals(9, c.maskedFetchAndAddSync(word, 1L << 32, 0));
            assertEquals(9 + (1L << 32), p.exposed().segment().get(ValueLayout.JAVA_LONG, 4096));

            // ON_ERROR writes, then a read behind them sees them all.
            LocalRegion small = p.client().allocate(8);
            for (int i = 0; i < 1000; i++) {
                small.segment().set(ValueLayout.JAVA_LONG, 0, i);
                c.write(small, r.slice(8 * (i % 64), 8), null, null, Completion.ON_ERROR);
            }
            c.readSync(r.slice(0, 512), in.slice(0, 512));
            for (int i = 0; i < 64; i++) {
                assertEquals((999 - i) / 64 * 64 + i, in.segment().get(ValueLayout.JAVA_LONG, 8L * i), "word " + i + ": its last write");
            }

            long[] values = await(p, c.batch().write(out, r.slice(0, 1000)).fetchAndAdd(word, 1).read(r.slice(0, 1000), in)
                    .submit());
            assertArrayEquals(new long[] {0, 9 + (1L << 32), 0}, values);

            // Messages: the server echoes each, with its length as imm.
            AtomicInteger got = new AtomicInteger();
            c.onReceive((conn, m) -> {
                assertEquals(100, m.byteCount());
                got.incrementAndGet();
            });
            for (int i = 1; i <= 200; i++) {
                await(p, c.send(out.slice(0, 100)));
                int want = i;
                pollUntil(p, () -> got.get() >= want);
            }
            assertEquals(200, got.get());
        }
    }

    /** Polls the client until {@code done} holds. */
    private static void pollUntil(TestPair p, BooleanSupplier done) throws TimeoutException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!done.getAsBoolean()) {
            if (p.client().poll() == 0) {
                Thread.onSpinWait();
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("not done within " + T + " s");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void anotherThreadIsRefusedAndNothingIsPosted(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion r = p.remote();
            LocalRegion out = p.client().allocate(8);
            out.segment().set(ValueLayout.JAVA_LONG, 0, 77);

            AtomicReference<CompletableFuture<Void>> future = new AtomicReference<>();
            assertEquals(null, onAnotherThread(() -> future.set(c.write(out, r.slice(0, 8)))),
                    "the future form reports through its future");
            ExecutionException e = assertThrows(ExecutionException.class, () -> future.get().get(T, TimeUnit.SECONDS));
            assertNamesBothThreads(e.getCause());

            AtomicInteger failed = new AtomicInteger();
            assertEquals(null, onAnotherThread(() -> c.fetchAndAdd(r.slice(4096, 8), 1, null,
                    new LongCompletionHandler<Object>() {
                        @Override
                        public void completed(long value, Object a) {
                            throw new AssertionError("posted from the wrong thread");
                        }

                        @Override
                        public void failed(Throwable t, Object a) {
                            assertNamesBothThreads(t);
                            failed.incrementAndGet();
                        }
                    })));
            assertEquals(1, failed.get(), "the handler was told once");
            assertNamesBothThreads(onAnotherThread(() -> c.writeSync(out, r.slice(0, 8))));
            assertNamesBothThreads(onAnotherThread(() -> p.client().poll()));
            AtomicReference<CompletableFuture<long[]>> batch = new AtomicReference<>();
            assertEquals(null, onAnotherThread(() -> batch.set(c.batch().write(out, r.slice(0, 8)).submit())),
                    "a batch reports through its future");
            assertNamesBothThreads(assertThrows(ExecutionException.class, () -> batch.get().get(T, TimeUnit.SECONDS)).getCause());

            // A region's in-flight count is the owner's: closing it elsewhere is refused, and it stays open.
            LocalRegion other = p.client().allocate(8);
            assertNamesBothThreads(onAnotherThread(other::close));
            c.readSync(r.slice(0, 8), other);
            other.close();
            assertThrows(IllegalArgumentException.class, () -> c.writeSync(other, r.slice(0, 8)), "closed on the owner");

            // Nothing of that reached the peer, and the owner goes on as before.
            assertEquals(0, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, p.exposed().segment().get(ValueLayout.JAVA_LONG, 4096));
            c.writeSync(out, r.slice(0, 8));
            assertEquals(77, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, c.fetchAndAddSync(r.slice(4096, 8), 1));
        }
    }

    /**
     * With one receive buffer, a message closed from another thread is refused and stays open;
     * closed on the owner, its buffer is posted again: the next message comes in.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aMessageClosedElsewhereStaysOpen(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.builder().receiveQueueDepth(1).build())) {
            Connection c = p.conn();
            LocalRegion out = p.client().allocate(16);
            out.segment().copyFrom(MemorySegment.ofArray(pattern(16, 3)));
            for (int round = 0; round < 3; round++) {
                CompletableFuture<Message> next = c.receive();
                await(p, c.send(out));
                Message m = await(p, next);
                assertNamesBothThreads(onAnotherThread(m::close));
                assertArrayEquals(pattern(16, 3), m.data().toArray(ValueLayout.JAVA_BYTE), "still open, still its data");
                m.close();
                assertThrows(IllegalStateException.class, m::data, "closed on the owner");
            }
        }
    }

    /**
     * Cancel safety with the plain in-flight count: a region closed while a READ lands in it keeps
     * its block until the READ ended (as RdmaOperationsConformance checks for a shared client).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aRegionClosedWhileAReadLandsInItIsNotReused(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            int size = 256 * 1024;
            LocalRegion source = p.server().allocate(size);
            source.segment().fill((byte) 0x11);
            RemoteRegion from = RemoteRegion.fromDescriptor(source.toRemote().toDescriptor());
            MemorySegment guard = java.lang.foreign.Arena.ofAuto().allocate(size);
            guard.fill((byte) 0xA5);
            for (int round = 0; round < 200; round++) {
                LocalRegion a = p.client().allocate(size);
                CompletableFuture<Void> read = p.conn().read(from, a);
                a.close();
                LocalRegion b = p.client().allocate(size);
                b.segment().copyFrom(guard);
                await(p, read);
                assertEquals(-1L, b.segment().mismatch(guard), "round " + round + ": the READ wrote into the next region");
                b.close();
            }
        }
    }

    @Test
    void needsTheInlineMode() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Rdma.builder().provider("tcp").singleThreaded(true).build());
        assertTrue(e.getMessage().contains("Rdma.INLINE"), e.getMessage());
    }
}
