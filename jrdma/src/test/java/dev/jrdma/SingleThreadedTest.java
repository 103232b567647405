package dev.jrdma;


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

    /** Counts completions and failures, each with what it was told. */
    private static final class Told<V> implements java.nio.channels.CompletionHandler<V, Object> {
        final AtomicInteger completed = new AtomicInteger(), failed = new AtomicInteger();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        @Override
        public void completed(V v, Object a) {
            completed.incrementAndGet();
        }

        @Override
        public void failed(Throwable t, Object a) {
            failure.compareAndSet(null, t);
            failed.incrementAndGet();
        }
    }

    /**
     * On shm the owner's writes and reads are carried out during the call once the peer's region
     * is mapped (QueuePair.postNow), with no lock, and still in RC's order: a write behind a
     * writeWithImm, which goes through the stream and lands only when the server polls, waits
     * for it. Were it done at once, the server would apply the older value over it, and the
     * word would end up wrong. Both completion kinds; on tcp everything goes through the stream.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void theOwnersDirectWritesKeepTheirOrderBehindTheStream(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion word = p.remote().slice(0, 8);
            LocalRegion first = p.client().allocate(8), then = p.client().allocate(8), in = p.client().allocate(8);
            AtomicInteger notices = new AtomicInteger();
            c.onReceive((conn, m) -> notices.incrementAndGet());   // the server answers each writeWithImm
            c.writeSync(then, word);   // the first write maps the region (shm)
            Told<Void> told = new Told<>();
            int rounds = 200;
            for (int i = 1; i <= rounds; i++) {
                first.segment().set(ValueLayout.JAVA_LONG, 0, 2L * i);
                then.segment().set(ValueLayout.JAVA_LONG, 0, 2L * i + 1);
                c.writeWithImm(first, word, i, null, told);
                if ((i & 1) == 0) {
                    c.write(then, word, null, null, Completion.ON_ERROR);
                } else {
                    c.write(then, word, null, told);
                }
                c.readSync(word, in);
                assertEquals(2L * i + 1, in.segment().get(ValueLayout.JAVA_LONG, 0), "round " + i + ": the read");
                int want = i;
                pollUntil(p, () -> notices.get() >= want);   // the server has applied the writeWithImm
                assertEquals(2L * i + 1, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0),
                        "round " + i + ": the write behind the writeWithImm was overtaken by it");
            }
            pollUntil(p, () -> told.completed.get() == rounds + rounds / 2);
            assertEquals(0, told.failed.get());
        }
    }

    /**
     * A wrong key on the owner's direct path is not carried out there: the request goes through
     * the send queue, which reports it once (ON_ERROR and ALWAYS alike), and the connection
     * holds the failure; a region of the peer that is not mapped yet goes the same way.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aWrongKeyOnTheOwnersDirectPathIsReportedOnce(String provider) throws Exception {
        for (Completion when : Completion.values()) {
            try (TestPair p = open(provider, ConnectionConfig.defaults())) {
                Connection c = p.conn();
                RemoteRegion r = p.remote();
                LocalRegion out = p.client().allocate(8);
                out.segment().set(ValueLayout.JAVA_LONG, 0, 5);
                c.writeSync(out, r.slice(0, 8));   // mapped (shm): the next write with its key would go directly
                RemoteRegion wrongKey = RemoteRegion.of(r.address(), r.length(), r.rkey() ^ 0x5555);
                Told<Void> told = new Told<>();
                out.segment().set(ValueLayout.JAVA_LONG, 0, 6);
                c.write(out, wrongKey.slice(0, 8), null, told, when);
                pollUntil(p, () -> told.failed.get() + told.completed.get() > 0);
                assertEquals(0, told.completed.get(), when + ": completed");
                assertInstanceOf(dev.jrdma.exceptions.RemoteAccessException.class, told.failure.get(), when + ": "
                        + told.failure.get());
                assertTrue(c.failure() == told.failure.get(), when + ": the connection holds the failure");
                assertEquals(5, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0), when + ": nothing was written");
                c.close();
                assertEquals(1, told.failed.get(), when + ": told once");
            }
        }
    }

    /**
     * The owner's ON_ERROR writes that shm carries out during the call take no slot and complete
     * nowhere; the statistics count them all the same, as tcp's that go through the queue.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void statisticsCountTheOwnersWritesDoneDuringTheCall(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion r = p.remote();
            LocalRegion out = p.client().allocate(64);
            c.writeSync(out, r.slice(0, 64));   // mapped (shm): the next writes with its key go directly
            for (int i = 0; i < 10; i++) {
                c.write(out, r.slice(0, 64), null, null, Completion.ON_ERROR);
            }
            c.writeSync(out, r.slice(0, 64));   // reports the ON_ERROR ones that went through the queue (tcp)
            ConnectionStatistics st = c.statistics();
            assertEquals(12, st.completed(OperationType.WRITE), st.toString());
            assertEquals(12 * 64, st.bytes(OperationType.WRITE));
            assertEquals(0, st.failed());
            assertEquals(0, st.outstanding());
        }
    }

    /**
     * writeOrPost and readOrPost: on shm's owner, once the peer's region is mapped, done during the
     * call (true, nobody told, the bytes there at once); the first call, before it is mapped, and
     * every call on tcp go through the queue (false, the handler told once, later). A read behind
     * done writes sees them, whichever way each went.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void theDoneOrPostFormsAreDoneDuringTheCallWhereTheyCanAndToldOnceWhereNot(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion word = p.remote().slice(64, 8);
            LocalRegion out = p.client().allocate(8), in = p.client().allocate(8);
            Told<Void> told = new Told<>();
            out.segment().set(ValueLayout.JAVA_LONG, 0, 1);
            assertFalse(c.writeOrPost(out, word, null, told), "the peer's region is not mapped yet: through the queue");
            pollUntil(p, () -> told.completed.get() == 1);
            assertEquals(1, p.exposed().segment().get(ValueLayout.JAVA_LONG, 64));
            boolean direct = provider.equals("shm");
            int queued = 1, rounds = 300;
            for (int i = 2; i <= rounds; i++) {
                out.segment().set(ValueLayout.JAVA_LONG, 0, i);
                boolean wrote = c.writeOrPost(out, word, null, told);
                assertEquals(direct, wrote, "round " + i + ": the write done during the call");
                if (wrote) {
                    assertEquals(i, p.exposed().segment().get(ValueLayout.JAVA_LONG, 64), "round " + i + ": done, and there");
                } else {
                    queued++;
                }
                in.segment().set(ValueLayout.JAVA_LONG, 0, -1);
                boolean read = c.readOrPost(word, in, null, told);
                assertEquals(direct, read, "round " + i + ": the read done during the call");
                if (!read) {
                    int want = ++queued;
                    pollUntil(p, () -> told.completed.get() + told.failed.get() == want);
                }
                assertEquals(i, in.segment().get(ValueLayout.JAVA_LONG, 0), "round " + i + ": the read behind the write");
            }
            assertEquals(queued, told.completed.get(), "each handler told once (queued " + queued + ")");
            assertEquals(0, told.failed.get(), String.valueOf(told.failure.get()));
            ConnectionStatistics st = c.statistics();
            assertEquals(rounds, st.completed(OperationType.WRITE), st.toString());
            assertEquals(rounds - 1, st.completed(OperationType.READ), st.toString());
            assertEquals(0, st.outstanding());
        }
    }

    /**
     * Bad input to writeOrPost and readOrPost: never done, the handler told once, with what was wrong
     * (out of bounds, a closed region during the call; a wrong key later, from the queue); no
     * handler at all is refused, and nothing is posted; a closed connection tells its handler.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void theDoneOrPostFormsTellBadInputOnce(String provider) throws Exception {
        try (TestPair p = open(provider, ConnectionConfig.defaults())) {
            Connection c = p.conn();
            RemoteRegion r = p.remote();
            LocalRegion out = p.client().allocate(16);
            out.segment().set(ValueLayout.JAVA_LONG, 0, 5);
            c.writeSync(out.slice(0, 8), r.slice(0, 8));   // mapped (shm): a good key would go directly now

            Told<Void> tooLong = new Told<>();
            assertFalse(c.writeOrPost(out, r.slice(0, 8), null, tooLong));
            assertEquals(1, tooLong.failed.get(), "told during the call");
            assertInstanceOf(IllegalArgumentException.class, tooLong.failure.get());
            Told<Void> tooLongRead = new Told<>();
            assertFalse(c.readOrPost(r.slice(8184, 8), out.slice(0, 16), null, tooLongRead));
            assertInstanceOf(IllegalArgumentException.class, tooLongRead.failure.get());

            NullPointerException npe = assertThrows(NullPointerException.class, () -> c.writeOrPost(out, r.slice(0, 16), null, null));
            assertTrue(npe.getMessage().contains("handler"), npe.getMessage());
            assertThrows(NullPointerException.class, () -> c.readOrPost(r.slice(0, 16), out, null, null));

            LocalRegion closed = p.client().allocate(8);
            closed.close();
            Told<Void> closedRegion = new Told<>();
            assertFalse(c.writeOrPost(closed, r.slice(0, 8), null, closedRegion));
            assertInstanceOf(IllegalArgumentException.class, closedRegion.failure.get(), String.valueOf(closedRegion.failure.get()));
            assertEquals(5, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0), "nothing of that was written");

            Told<Void> wrongKey = new Told<>();
            out.segment().set(ValueLayout.JAVA_LONG, 0, 6);
            assertFalse(c.writeOrPost(out.slice(0, 8), RemoteRegion.of(r.address(), r.length(), r.rkey() ^ 0x5555).slice(0, 8), null,
                    wrongKey), "a wrong key is not done during the call");
            pollUntil(p, () -> wrongKey.failed.get() > 0);
            assertInstanceOf(dev.jrdma.exceptions.RemoteAccessException.class, wrongKey.failure.get(), String.valueOf(wrongKey.failure.get()));
            assertEquals(5, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0), "nothing was written");
            c.close();
            assertEquals(1, wrongKey.failed.get(), "told once");
            assertEquals(0, wrongKey.completed.get() + tooLong.completed.get() + closedRegion.completed.get());

            Told<Void> afterClose = new Told<>();
            assertFalse(c.readOrPost(r.slice(0, 8), out.slice(0, 8), null, afterClose));
            pollUntil(p, () -> afterClose.failed.get() > 0);
            assertEquals(1, afterClose.failed.get());
            assertEquals(0, afterClose.completed.get());
        }
    }

    /** On an instance shared by threads writeOrPost is never done during the call: false, and the handler told once. */
    @Test
    void theDoneOrPostFormsOnASharedInstanceAlwaysTell() throws Exception {
        try (TestPair p = TestPair.open(Transport.shm(), CompletionMode.POLLING)) {
            Connection c = p.conn();
            RemoteRegion word = p.remote().slice(0, 8);
            LocalRegion out = p.client().allocate(8);
            c.writeSync(out, word);
            Told<Void> told = new Told<>();
            for (int i = 1; i <= 100; i++) {
                out.segment().set(ValueLayout.JAVA_LONG, 0, i);
                assertFalse(c.writeOrPost(out, word, null, told), "round " + i);
                int want = i;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                while (told.completed.get() + told.failed.get() < want) {
                    assertTrue(System.nanoTime() < deadline, "round " + i + ": told within " + T + " s");
                    Thread.onSpinWait();
                }
                assertEquals(i, p.exposed().segment().get(ValueLayout.JAVA_LONG, 0));
            }
            assertEquals(100, told.completed.get());
            assertEquals(0, told.failed.get());
        }
    }

    @Test
    void needsTheInlineMode() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Rdma.builder().provider("tcp").singleThreaded(true).build());
        assertTrue(e.getMessage().contains("Rdma.INLINE"), e.getMessage());
    }
}
