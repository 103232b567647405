package dev.jrdma;

import dev.jrdma.FakeProvider.FakeQueuePair;
import dev.jrdma.FakeProvider.Posted;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operation core (send-queue slots, in-order completion, batches, emulated atomics, error
 * mapping, teardown) driven through a fake provider whose queue pair completes only what the test
 * says, in INLINE mode, with a clock the test moves: every step is the test's, nothing waits on
 * time passing.
 */
@Timeout(60)
class ConnectionCoreTest {
    private static final int DEPTH = 4;
    private static final Duration TIMEOUT = Duration.ofSeconds(2);
    final FakeProvider fake = new FakeProvider();
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private Rdma rdma;
    private Connection c;
    private FakeQueuePair qp;
    private final RemoteRegion remote = new RemoteRegion(0x10_0000, 4096, 77,
            AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC);

    private void open() throws InterruptedException {
        open(DEPTH);
    }

    private void open(int depth) throws InterruptedException {
        rdma = Rdma.builder().provider(fake).ioThreads(Rdma.INLINE).clock(clock::get).build();
        c = rdma.connect(new InetSocketAddress("127.0.0.1", 7471), ConnectionConfig.builder().sendQueueDepth(depth)
                .receiveQueueDepth(2).receiveBufferSize(256).timeout(TIMEOUT).build());
        qp = fake.queuePairs.poll(5, TimeUnit.SECONDS);
        assertEquals(ConnectionState.ESTABLISHED, c.state());
    }

    @AfterEach
    void close() {
        if (rdma != null) {
            rdma.close();
            assertEquals(0, qp.postsOutsideMonitor.get(), "every post was under the connection's post monitor");
            assertEquals(0, fake.device.openRegistrations.get(), "every registration was closed");
        }
    }

    /** Polls until a pass finds nothing to do. */
    private void settle() {
        while (rdma.poll() > 0) {
            Thread.onSpinWait();
        }
    }

    private static Throwable failureOf(CompletableFuture<?> f) {
        assertTrue(f.isCompletedExceptionally(), "failed");
        ExecutionException e = assertThrows(ExecutionException.class, f::get);
        return e.getCause();
    }

    /** Counts every call, to prove each operation completes exactly once. */
    static final class Counting<V> implements CompletionHandler<V, Integer> {
        final AtomicInteger calls = new AtomicInteger();
        final long[] values = new long[1000];
        final Throwable[] failures = new Throwable[1000];

        @Override
        public void completed(V v, Integer i) {
            calls.incrementAndGet();
            values[i] = v instanceof Long l ? l : 0;
        }

        @Override
        public void failed(Throwable e, Integer i) {
            calls.incrementAndGet();
            failures[i] = e;
        }
    }

    @Test
    void slotsWrapRoundAfterRoundAndEachOperationCompletesOnceWithItsOwnValue() throws Exception {
        open();
        Counting<Long> h = new Counting<>();
        for (int round = 0; round < 25; round++) {
            for (int i = 0; i < DEPTH; i++) {
                c.fetchAndAdd(remote, 1, round * DEPTH + i, h);
            }
            for (int i = 0; i < DEPTH; i++) {
                Posted p = qp.nextSend();
                assertEquals(QueuePair.WR_ATOMIC_FETCH_AND_ADD, p.opcode());
                assertTrue(p.signaled());
                qp.completeAtomic(p, 1000L + round * DEPTH + i);
            }
            settle();
            assertEquals((round + 1) * DEPTH, h.calls.get());
        }
        for (int i = 0; i < 25 * DEPTH; i++) {
            assertEquals(1000L + i, h.values[i], "operation " + i + " got its own prior value");
            assertNull(h.failures[i]);
        }
        assertEquals(0, qp.outstandingCount());
    }

    @Test
    void aFullSendQueueWaitsForAFreeSlotAndTimesOutOnItsClock() throws Exception {
        open();
        List<CompletableFuture<Void>> first = new java.util.ArrayList<>();
        LocalRegion buf = rdma.allocate(64);
        for (int i = 0; i < DEPTH; i++) {
            first.add(c.write(buf, remote));
        }
        List<Posted> posted = new java.util.ArrayList<>();
        for (int i = 0; i < DEPTH; i++) {
            posted.add(qp.nextSend());
        }
        // A fifth, from another thread, waits (polling: INLINE) until a slot frees.
        CompletableFuture<CompletableFuture<Void>> fifth = CompletableFuture.supplyAsync(() -> c.write(buf, remote));
        assertNull(qp.sends.poll(50, TimeUnit.MILLISECONDS), "no fifth request while four are outstanding");
        qp.complete(posted.get(0), WorkCompletion.SUCCESS);
        Posted p5 = qp.nextSend();   // posted once the fifth's own poll freed the slot
        assertEquals(posted.get(0).wrId(), p5.wrId(), "the freed slot is reused");
        first.get(0).get(5, TimeUnit.SECONDS);
        CompletableFuture<Void> f5 = fifth.get(5, TimeUnit.SECONDS);
        // Full again: a sixth waits, and fails once the clock says the timeout passed.
        CompletableFuture<CompletableFuture<Void>> sixth = CompletableFuture.supplyAsync(() -> c.write(buf, remote));
        assertNull(qp.sends.poll(50, TimeUnit.MILLISECONDS));
        clock.addAndGet(TIMEOUT.toNanos() + 1);
        Throwable e = failureOf(sixth.get(5, TimeUnit.SECONDS));
        assertInstanceOf(RdmaTimeoutException.class, e);
        assertTrue(e.getMessage().contains("stayed full (4 operations outstanding)"), e.getMessage());
        for (int i = 1; i < DEPTH; i++) {
            qp.complete(posted.get(i), WorkCompletion.SUCCESS);
        }
        qp.complete(p5, WorkCompletion.SUCCESS);
        settle();
        for (CompletableFuture<Void> f : first) {
            assertNull(f.getNow(null));
            assertTrue(f.isDone());
        }
        assertTrue(f5.isDone() && !f5.isCompletedExceptionally());
        assertEquals(ConnectionState.ESTABLISHED, c.state(), "a full queue fails the operation, not the connection");
        buf.close();
    }

    @Test
    void aBatchIsOneChainSignaledAtItsEndAndCompletesWithItsAtomicsValues() throws Exception {
        open();
        LocalRegion a = rdma.allocate(64);
        LocalRegion b = rdma.allocate(64);
        CompletableFuture<long[]> f = c.batch().write(a, remote).compareAndSwap(remote, 0, 5).fetchAndAdd(remote, 2)
                .read(remote, b).submit();
        Posted[] p = new Posted[4];
        for (int i = 0; i < 4; i++) {
            p[i] = qp.nextSend();
            assertEquals(i == 3, p[i].signaled(), "only the last is signaled");
        }
        assertEquals(QueuePair.WR_ATOMIC_CMP_AND_SWP, p[1].opcode());
        assertEquals(5, p[1].swap());
        qp.land(p[1], 41);
        qp.land(p[2], 42);
        settle();
        assertFalse(f.isDone());
        qp.complete(p[3], WorkCompletion.SUCCESS);   // RC: the three before it are done too
        settle();
        assertArrayEquals(new long[] {0, 41, 42, 0}, f.get());
        a.close();
        b.close();
    }

    @Test
    void aBatchTheDeviceTakesOnlyPartlyFailsEachMemberOnceAndTheConnection() throws Exception {
        open();
        LocalRegion a = rdma.allocate(64);
        // At its first request: nothing is posted, the connection stays up.
        qp.failErrno = 12;
        qp.failAt = 0;
        CompletableFuture<long[]> none = c.batch().write(a, remote).write(a, remote).submit();
        Throwable e0 = failureOf(none);
        assertTrue(e0.getMessage().contains("errno 12 at operation 0 of 2"), e0.getMessage());
        assertEquals(ConnectionState.ESTABLISHED, c.state());
        assertEquals(0, qp.outstandingCount());
        // At its third: two went out unsignaled and would never be reported, so the connection
        // is put in error, which flushes them; the batch fails once, with the post's error.
        qp.failErrno = 12;
        qp.failAt = 2;
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        c.batch().write(a, remote).fetchAndAdd(remote, 1).write(a, remote).read(remote, a).submit(null,
                new CompletionHandler<long[], Object>() {
                    @Override
                    public void completed(long[] v, Object x) {
                        calls.incrementAndGet();
                    }

                    @Override
                    public void failed(Throwable e, Object x) {
                        calls.incrementAndGet();
                        failure.set(e);
                    }
                });
        assertEquals(3, qp.sends.size(), "the two members the device took, and the marker behind them");
        qp.nextSend();
        qp.nextSend();
        Posted marker = qp.nextSend();
        assertTrue(marker.signaled() && marker.length() == 0 && marker.opcode() == QueuePair.WR_RDMA_WRITE);
        settle();
        assertEquals(1, calls.get());
        assertTrue(failure.get().getMessage().contains("errno 12 at operation 2 of 4 (write"), failure.get().getMessage());
        assertEquals(ConnectionState.ERROR, c.state());
        assertSame(failure.get(), c.failure());
        assertInstanceOf(ConnectionClosedException.class, failureOf(c.write(a, remote)));
        a.close();
    }

    @Test
    void anEmulatedAtomicPostsItsNextAttemptWithWhatItsCompareAndSwapSaw() throws Exception {
        open();
        // Set the high nibble to 0xA where the low byte is 0x0F.
        CompletableFuture<Long> f = c.maskedCompareAndSwap(remote, 0x0F, 0xFF, 0xA0, 0xF0);
        Posted first = qp.nextSend();
        assertEquals(QueuePair.WR_ATOMIC_CMP_AND_SWP, first.opcode());
        assertEquals(0, first.compareAdd(), "the first attempt assumes the word is 0");
        qp.completeAtomic(first, 0x0F);
        settle();
        assertFalse(f.isDone());
        Posted second = qp.nextSend();
        assertEquals(first.wrId(), second.wrId(), "the same slot");
        assertEquals(0x0F, second.compareAdd());
        assertEquals(0xAF, second.swap());
        qp.completeAtomic(second, 0x0F);   // it took effect
        settle();
        assertEquals(0x0FL, f.get());
        // A word that needs no change settles at the compare-and-swap that saw it.
        CompletableFuture<Long> g = c.maskedCompareAndSwap(remote, 0x0F, 0xFF, 0xA0, 0xF0);
        qp.completeAtomic(qp.nextSend(), 0x11);
        settle();
        assertEquals(0x11L, g.get());
        assertEquals(0, qp.sends.size());
    }

    @Test
    void anEmulatedAtomicGivesUpWhenItsTimeIsUpAndTheConnectionStays() throws Exception {
        open();
        CompletableFuture<Void> f = c.atomicWrite(remote, 7);
        Posted p = qp.nextSend();
        assertEquals(7, p.swap());
        qp.completeAtomic(p, 1);
        settle();
        p = qp.nextSend();
        assertEquals(1, p.compareAdd());
        clock.addAndGet(TIMEOUT.toNanos() + 1);
        qp.completeAtomic(p, 2);   // changed again under it, and its time is up
        settle();
        Throwable e = failureOf(f);
        assertInstanceOf(RdmaTimeoutException.class, e);
        assertTrue(e.getMessage().startsWith("atomicWrite on the connection to"), e.getMessage());
        assertTrue(e.getMessage().contains("gave up"), e.getMessage());
        assertEquals(0, qp.sends.size(), "no attempt after its deadline");
        assertEquals(ConnectionState.ESTABLISHED, c.state());
        CompletableFuture<Long> next = c.fetchAndAdd(remote, 1);
        qp.completeAtomic(qp.nextSend(), 9);
        settle();
        assertEquals(9L, next.get(), "its slot serves the next operation");
    }

    @Test
    void aFailedCompletionNamesItsCauseAndTheOthersAreFlushedOnce() throws Exception {
        open();
        LocalRegion a = rdma.allocate(64);
        Counting<Long> h = new Counting<>();
        c.fetchAndAdd(remote, 1, 0, h);
        c.fetchAndAdd(remote, 1, 1, h);
        c.fetchAndAdd(remote, 1, 2, h);
        Posted p0 = qp.nextSend();
        qp.complete(p0, WorkCompletion.REM_ACCESS_ERR);   // the fake puts its QP in error: the rest are flushed
        settle();
        assertEquals(3, h.calls.get());
        assertInstanceOf(RemoteAccessException.class, h.failures[0]);
        assertTrue(h.failures[0].getMessage().contains("fetchAndAdd on the connection to"), h.failures[0].getMessage());
        assertTrue(h.failures[0].getMessage().contains("IBV_WC_REM_ACCESS_ERR"), h.failures[0].getMessage());
        for (int i = 1; i < 3; i++) {
            assertInstanceOf(ConnectionClosedException.class, h.failures[i]);
            assertSame(h.failures[0], h.failures[i].getCause(), "flushed because of the first failure");
        }
        assertEquals(ConnectionState.ERROR, c.state());
        assertSame(h.failures[0], c.failure());
        RdmaException later = assertThrows(RdmaException.class, () -> c.writeSync(a, remote));
        assertTrue(later.getMessage().startsWith("write: the connection to"), later.getMessage());
        a.close();
    }

    @Test
    void aFlushIsNotTheCauseWhenTheFailureBehindItCompletesAfterIt() throws Exception {
        open();
        Counting<Long> h = new Counting<>();
        c.fetchAndAdd(remote, 1, 0, h);
        c.fetchAndAdd(remote, 1, 1, h);
        c.fetchAndAdd(remote, 1, 2, h);
        qp.failAfterReceiveFlushes(qp.nextSend(), WorkCompletion.REM_ACCESS_ERR);
        settle();
        assertEquals(3, h.calls.get());
        assertInstanceOf(RemoteAccessException.class, h.failures[0]);
        for (int i = 1; i < 3; i++) {
            assertSame(h.failures[0], h.failures[i].getCause(), "flushed because of the access error, not the receives' flush");
        }
        assertSame(h.failures[0], c.failure(), "the connection's failure is the access error");
        assertEquals(ConnectionState.ERROR, c.state());
    }

    @Test
    void aPostTheDeviceRefusesGivesItsSlotBack() throws Exception {
        open();
        LocalRegion a = rdma.allocate(64);
        qp.failErrno = 12;
        Throwable e = failureOf(c.write(a, remote));
        assertEquals("write: ibv_post_send failed with errno 12 (the QP is RTS)", e.getMessage());
        assertEquals(ConnectionState.ESTABLISHED, c.state());
        // All four slots are there: four writes go out without waiting (from another thread,
        // so that a lost slot shows as a missing post, not as this thread waiting).
        CompletableFuture<List<CompletableFuture<Void>>> writes = CompletableFuture.supplyAsync(() -> {
            List<CompletableFuture<Void>> all = new java.util.ArrayList<>();
            for (int i = 0; i < DEPTH; i++) {
                all.add(c.write(a, remote));
            }
            return all;
        });
        for (int i = 0; i < DEPTH; i++) {
            qp.nextSend();
        }
        List<CompletableFuture<Void>> all = writes.get(5, TimeUnit.SECONDS);
        for (Posted p : qp.outstanding()) {
            qp.complete(p, WorkCompletion.SUCCESS);
        }
        settle();
        for (CompletableFuture<Void> f : all) {
            assertTrue(f.isDone() && !f.isCompletedExceptionally());
        }
        a.close();
    }

    @Test
    void closeFailsEveryOutstandingOperationOnceAndFreesItsRegistrations() throws Exception {
        open();
        int before = fake.device.openRegistrations.get();
        Counting<Long> h = new Counting<>();
        for (int i = 0; i < 3; i++) {
            c.compareAndSwap(remote, 0, 1, i, h);
        }
        assertEquals(3, qp.outstandingCount());
        c.close();
        assertEquals(3, h.calls.get());
        for (int i = 0; i < 3; i++) {
            assertInstanceOf(ConnectionClosedException.class, h.failures[i]);
            assertTrue(h.failures[i].getMessage().contains("was closed by this side"), h.failures[i].getMessage());
        }
        assertEquals(ConnectionState.CLOSED, c.state());
        assertEquals(before - 2, fake.device.openRegistrations.get(), "its receive buffers and scratch words");
        RdmaException e = assertThrows(RdmaException.class, () -> c.compareAndSwapSync(remote, 0, 1));
        assertInstanceOf(ConnectionClosedException.class, e);
    }

    @Test
    void aMessageIsDeliveredAndItsBufferPostedAgainWhenClosed() throws Exception {
        open();
        FakeProvider.PostedReceive r0 = qp.receives.poll(5, TimeUnit.SECONDS);
        assertTrue(qp.receives.size() == 1, "both receives posted at the start");
        CompletableFuture<Message> m = c.receive();
        qp.deliver("hello".getBytes());
        settle();
        try (Message msg = m.get()) {
            assertEquals(5, msg.byteCount());
            assertEquals("hello", new String(msg.data().toArray(ValueLayout.JAVA_BYTE)));
            assertEquals(0, qp.receives.size() - 1, "not posted again while the message is open");
        }
        FakeProvider.PostedReceive again = qp.receives.poll(5, TimeUnit.SECONDS);
        FakeProvider.PostedReceive second = again.localAddr() == r0.localAddr() ? again : qp.receives.poll(5, TimeUnit.SECONDS);
        assertEquals(r0.localAddr(), second.localAddr(), "the closed message's buffer is posted again");
    }

    @Test
    void aReceiveCallbackTakenAwayHandsTheMessagesThatFollowToReceive() throws Exception {
        open();
        qp.deliver("kept".getBytes());   // nobody asks for it: kept
        settle();
        c.onReceive(null);   // no callback to hand the kept one to: it stays kept (it used to be re-kept forever)
        settle();
        try (Message m = c.receive().get(5, TimeUnit.SECONDS)) {
            assertEquals("kept", new String(m.data().toArray(ValueLayout.JAVA_BYTE)));
        }
        List<String> viaCallback = new java.util.ArrayList<>();
        c.onReceive((conn, m) -> viaCallback.add(new String(m.data().toArray(ValueLayout.JAVA_BYTE))));
        qp.deliver("one".getBytes());
        settle();
        assertEquals(List.of("one"), viaCallback);
        c.onReceive(null);
        CompletableFuture<Message> next = c.receive();
        qp.deliver("two".getBytes());
        settle();
        try (Message m = next.get(5, TimeUnit.SECONDS)) {
            assertEquals("two", new String(m.data().toArray(ValueLayout.JAVA_BYTE)));
        }
        assertEquals(List.of("one"), viaCallback, "the callback taken away got nothing more");
    }

    @Test
    void aCallbackIsHandedOneMessageObjectAgainEachWithItsOwnBytesAndClosedWhenTheCallbackReturned() throws Exception {
        open();
        List<Message> handed = new java.util.ArrayList<>();
        List<String> bytes = new java.util.ArrayList<>();
        c.onReceive((conn, m) -> {
            handed.add(m);
            bytes.add(new String(m.data().toArray(ValueLayout.JAVA_BYTE)));
        });
        for (String s : List.of("first", "second, longer", "third")) {   // more than the 2 receive buffers
            qp.deliver(s.getBytes());
            settle();
        }
        assertEquals(List.of("first", "second, longer", "third"), bytes, "each message its own bytes, its own length");
        assertEquals(3, handed.size());
        assertSame(handed.get(0), handed.get(1), "no message object per message");
        assertSame(handed.get(1), handed.get(2));
        IllegalStateException kept = assertThrows(IllegalStateException.class, () -> handed.get(0).data(),
                "a message kept past its callback is closed");
        assertTrue(kept.getMessage().contains("closed"), kept.getMessage());
    }

    @Test
    void aMessageArrivingWhileACallbackRunsIsHandedOverAfterItReturnedSoTheReusedObjectIsNeverInTwoPlaces() throws Exception {
        open();
        List<String> bytes = new java.util.ArrayList<>();
        List<Integer> handedDuringFirst = new java.util.ArrayList<>();
        c.onReceive((conn, m) -> {
            bytes.add(new String(m.data().toArray(ValueLayout.JAVA_BYTE)));
            if (bytes.size() == 1) {
                qp.deliver("inner".getBytes());
                settle();   // from inside a pass: passes do not nest, nothing is delivered now
                handedDuringFirst.add(bytes.size());
                bytes.add("outer still reads " + new String(m.data().toArray(ValueLayout.JAVA_BYTE)));
            }
        });
        qp.deliver("outer".getBytes());
        settle();
        assertEquals(List.of(1), handedDuringFirst, "nothing was handed over while the first callback ran");
        assertEquals(List.of("outer", "outer still reads outer", "inner"), bytes);
    }

    @Test
    void onErrorOperationsGoUnsignaledExceptOneInEachRunAndReportNothingWhenTheySucceed() throws Exception {
        open(16);   // one signaled in every 16 / 4
        LocalRegion a = rdma.allocate(64);
        Counting<Long> h = new Counting<>();
        for (int i = 0; i < 10; i++) {
            c.write(a, remote, null, null, Completion.ON_ERROR);
        }
        c.fetchAndAdd(remote, 1, 0, h, Completion.ON_ERROR);
        c.fetchAndAdd(remote, 1, 1, h, Completion.ON_ERROR);
        StringBuilder signals = new StringBuilder();
        List<Posted> posted = new java.util.ArrayList<>();
        for (int i = 0; i < 12; i++) {
            Posted p = qp.nextSend();
            posted.add(p);
            signals.append(p.signaled() ? 'S' : '-');
        }
        assertEquals("---S---S---S", signals.toString());
        for (Posted p : posted) {
            if (p.signaled()) {
                qp.complete(p, WorkCompletion.SUCCESS);
            }
        }
        settle();
        assertEquals(0, h.calls.get(), "success is silent");
        // An ALWAYS operation after them reports them done, by being done.
        CompletableFuture<Void> w = c.write(a, remote);
        Posted last = qp.nextSend();
        assertTrue(last.signaled());
        qp.complete(last, WorkCompletion.SUCCESS);
        settle();
        assertTrue(w.isDone() && !w.isCompletedExceptionally());
        assertEquals(ConnectionState.ESTABLISHED, c.state());
        a.close();
    }

    @Test
    void aTeardownAfterSilentSuccessesEndsAtOnceThroughItsMarker() throws Exception {
        open(16);
        LocalRegion a = rdma.allocate(64);
        Counting<Void> h = new Counting<>();
        c.write(a, remote, 0, h, Completion.ON_ERROR);
        c.write(a, remote, 1, h, Completion.ON_ERROR);
        Posted p0 = qp.nextSend(), p1 = qp.nextSend();
        qp.completeSilently(p0);   // the device did them, and reports nothing
        qp.completeSilently(p1);
        CompletableFuture<Void> closed = c.closeAsync();
        settle();
        // Behind them, after the QP went to error: a signaled zero-length write, flushed, whose
        // completion says the two before it are done. Without it the teardown would wait for
        // its deadline, as nothing else will ever report them.
        Posted marker = qp.nextSend();
        assertEquals(QueuePair.WR_RDMA_WRITE, marker.opcode());
        assertEquals(0, marker.length());
        assertTrue(marker.signaled());
        assertTrue(closed.isDone(), "released as soon as the marker's completion came");
        assertEquals(0, h.calls.get(), "the two succeeded: nothing to tell");
        a.close();
    }

    @Test
    void anOnErrorFailureIsToldToItsHandlerAndFailsTheConnectionAndWhatFollows() throws Exception {
        open(16);
        LocalRegion a = rdma.allocate(64);
        Counting<Void> h = new Counting<>();
        c.write(a, remote, 0, h, Completion.ON_ERROR);
        c.write(a, remote, null, null, Completion.ON_ERROR);
        CompletableFuture<Void> flush = c.flush(remote, FlushType.VISIBILITY);
        Posted p0 = qp.nextSend();
        assertFalse(p0.signaled());
        qp.complete(p0, WorkCompletion.REM_ACCESS_ERR);   // a failed request is reported, signaled or not
        settle();
        assertEquals(1, h.calls.get());
        assertInstanceOf(RemoteAccessException.class, h.failures[0]);
        assertSame(h.failures[0], c.failure(), "the connection's error path has it");
        assertEquals(ConnectionState.ERROR, c.state());
        Throwable f = failureOf(flush);
        assertInstanceOf(ConnectionClosedException.class, f);
        assertSame(h.failures[0], f.getCause(), "the flush after it fails because of it");
        // Without a handler, bad input throws to the caller: there is nobody else to tell.
        RdmaException e = assertThrows(RdmaException.class, () -> c.write(a, remote, null, null, Completion.ON_ERROR));
        assertInstanceOf(ConnectionClosedException.class, e);
        assertThrows(NullPointerException.class, () -> c.write(a, remote, null, null, Completion.ALWAYS));
        a.close();
    }

    @Test
    void atomicsTakeAPrimitiveHandlerThatGetsTheValueUnboxed() throws Exception {
        open();
        long[] got = new long[2];
        AtomicReference<Throwable> failed = new AtomicReference<>();
        LongCompletionHandler<long[]> h = new LongCompletionHandler<>() {
            @Override
            public void completed(long value, long[] into) {
                into[0] = value;
                into[1]++;
            }

            @Override
            public void failed(Throwable e, long[] into) {
                failed.set(e);
                into[1]++;
            }
        };
        c.fetchAndAdd(remote, 1, got, h);
        qp.completeAtomic(qp.nextSend(), 1L << 40);
        settle();
        assertArrayEquals(new long[] {1L << 40, 1}, got);
        c.maskedFetchAndAdd(remote, 1, 0, got, h);   // emulated: settles at its first compare-and-swap
        qp.completeAtomic(qp.nextSend(), 0);
        settle();
        assertArrayEquals(new long[] {0, 2}, got);
        c.compareAndSwap(remote.slice(4, 8), 0, 1, got, h);   // bad input: through the handler
        assertEquals(3, got[1]);
        assertTrue(failed.get().getMessage().contains("not 8-byte aligned"), failed.get().getMessage());
    }

    @Test
    void aRegionClosedWithAnOperationInFlightKeepsItsMemoryAndRegistrationUntilItEnds() throws Exception {
        open();
        // Pooled memory: the block is not lent again while the read may still land in it.
        LocalRegion a = rdma.allocate(4096);
        CompletableFuture<Void> read = c.read(remote, a);
        Posted p = qp.nextSend();
        a.close();
        assertEquals(1, a.resources().operationsInFlight());
        assertThrows(IllegalArgumentException.class, () -> c.writeSync(a, remote), "a closed region takes no new operation");
        LocalRegion b = rdma.allocate(4096);
        assertFalse(b.address() == a.address(), "the held block is not lent again");
        qp.complete(p, WorkCompletion.SUCCESS);
        settle();
        assertTrue(read.isDone() && !read.isCompletedExceptionally(), "the operation itself completes as usual");
        assertEquals(0, a.resources().operationsInFlight());
        b.close();
        // The application's memory, registered: its registration stays until the operation ended.
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            int before = fake.device.openRegistrations.get();
            LocalRegion r = rdma.register(arena.allocate(4096), Access.LOCAL_WRITE);
            assertEquals(before + 1, fake.device.openRegistrations.get());
            Counting<Void> h = new Counting<>();
            c.write(r, remote, 0, h);
            c.write(r.slice(0, 8), remote, 1, h);
            Posted w0 = qp.nextSend(), w1 = qp.nextSend();
            r.close();
            qp.complete(w0, WorkCompletion.SUCCESS);
            settle();
            assertEquals(before + 1, fake.device.openRegistrations.get(), "one write is still in flight");
            qp.complete(w1, WorkCompletion.SUCCESS);
            settle();
            assertEquals(before, fake.device.openRegistrations.get(), "dropped when the last one ended");
            assertEquals(2, h.calls.get());
        }
    }

    @Test
    void anUnsignaledRequestTheProviderCarriedOutAtOnceHoldsNothing() throws Exception {
        open(16);
        qp.doneWhenUnsignaled = true;
        LocalRegion a = rdma.allocate(64);
        // Many times the queue's depth, with no completion at all: none of them holds a slot.
        for (int i = 0; i < 16 * 50; i++) {
            c.write(a, remote, null, null, Completion.ON_ERROR);
        }
        assertEquals(0, a.resources().operationsInFlight(), "nor the region");
        int signaled = 0;
        for (Posted p : qp.outstanding()) {
            signaled += p.signaled() ? 1 : 0;
        }
        assertEquals(0, signaled, "no reclaiming signal was needed");
        assertEquals(0, qp.outstandingCount());
        CompletableFuture<Void> closed = c.closeAsync();
        settle();
        assertTrue(closed.isDone(), "and no marker: nothing silent is outstanding");
        assertEquals(16 * 50, qp.sends.size(), "every write was posted, none after the close");
        a.close();
    }

    @Test
    void aPartlyPostedBatchWhoseMembersWereDoneAtOnceStillEndsItsTeardownAtOnce() throws Exception {
        open(16);
        qp.doneWhenUnsignaled = true;
        LocalRegion a = rdma.allocate(64);
        qp.failErrno = 12;
        qp.failAt = 2;
        CompletableFuture<long[]> f = c.batch().write(a, remote).write(a, remote).write(a, remote).submit();
        settle();
        assertTrue(f.isCompletedExceptionally());
        assertEquals(ConnectionState.ERROR, c.state());
        // The two members done at once have no entry for the error state to flush: the marker
        // behind them reports them, and the teardown does not wait for its deadline.
        CompletableFuture<Void> closed = c.closeAsync();
        settle();
        assertTrue(closed.isDone());
        a.close();
    }

    // ------------------------------------------------------------ a port down past the retry budget

    /** A QP as rxe reports one: ack timeout 1 (8 us), 2 retries, port 1; so the budget is 24 us and the check about 100 ms on. */
    private void onPortOne() {
        qp.ackTimeout = 1;
        qp.retryCount = 2;
        qp.port = 1;
    }

    private void portEvent(String type, int port) {
        fake.device.events.onDeviceEvent(type, false, -1, port);
    }

    /** Polls until {@code done} or 10 s (the check runs on the JDK's delay thread's time, 100 ms after the event). */
    private void pollUntil(java.util.function.BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            rdma.poll();
            Thread.onSpinWait();
        }
        assertTrue(done.getAsBoolean(), "not within 10 s");
    }

    @Test
    void aPortDownPastTheBudgetWithADeviceThatStallsFailsEachOutstandingOperationOnce() throws Exception {
        open();
        onPortOne();
        Counting<Long> h = new Counting<>();
        for (int i = 0; i < 3; i++) {
            c.fetchAndAdd(remote, 1, i, h);
        }
        settle();
        portEvent("IBV_EVENT_PORT_ERR", 1);   // and the device neither retries nor fails anything: rxe on Linux 6.1
        pollUntil(() -> h.calls.get() == 3);
        settle();
        assertEquals(3, h.calls.get(), "each ended once");
        for (int i = 0; i < 3; i++) {
            assertInstanceOf(ConnectionClosedException.class, h.failures[i]);
            assertTrue(h.failures[i].getMessage().contains("port 1 of fake0 went down and stayed down past the retry budget"),
                    h.failures[i].getMessage());
        }
        assertEquals(ConnectionState.ERROR, c.state());
        assertEquals(QueuePair.STATE_ERR, qp.queryState(), "the QP was put in error, which flushed the requests");
    }

    @Test
    void aPortBackWithinTheBudgetOrAnotherPortOrAnIdleConnectionLeavesTheConnectionAlone() throws Exception {
        open();
        onPortOne();
        portEvent("IBV_EVENT_PORT_ERR", 1);   // idle: a QP without requests does not fail on a dead link
        settle();
        assertEquals(0, c.life.portDownChecksScheduled, "a check for an idle connection");
        portEvent("IBV_EVENT_PORT_ACTIVE", 1);
        Counting<Long> h = new Counting<>();
        c.fetchAndAdd(remote, 1, 0, h);
        settle();
        portEvent("IBV_EVENT_PORT_ERR", 2);   // not this QP's port (it stays down)
        settle();
        assertEquals(0, c.life.portDownChecksScheduled, "a check for another port");
        portEvent("IBV_EVENT_PORT_ERR", 1);
        portEvent("IBV_EVENT_PORT_ACTIVE", 1);   // a flap shorter than the budget
        settle();
        assertEquals(1, c.life.portDownChecksScheduled);
        pollUntil(() -> c.life.portDownChecks == 1);
        settle();
        assertEquals(0, h.calls.get(), "nothing ended");
        portEvent("IBV_EVENT_PORT_ERR", 1);   // down for good, but ...
        Posted p = qp.nextSend();
        qp.complete(p, WorkCompletion.SUCCESS);   // ... the device makes progress: it is not stalled
        settle();
        c.fetchAndAdd(remote, 1, 1, h);
        settle();
        pollUntil(() -> c.life.portDownChecks == 2);
        settle();
        assertEquals(1, h.calls.get(), "only the one the device completed ended");
        assertNull(h.failures[0]);
        assertEquals(ConnectionState.ESTABLISHED, c.state());
        qp.complete(qp.nextSend(), WorkCompletion.SUCCESS);
        settle();
        assertEquals(2, h.calls.get());
    }

    /**
     * A connect runs on IO loop 0 (the connection manager's), the connection it makes on the loop
     * it was given. A connect that failed at once there used to free the CQ on loop 0 while loop 1
     * had yet to run the task that adds the CQ to what it polls: loop 1 then polled and armed a
     * destroyed CQ (on verbs, a SIGSEGV in ibv_req_notify_cq under Netty's event loops). The loops
     * are driven by the test, one pass at a time, so the order is the one that broke.
     */
    @Test
    void aConnectFailingOnLoopZeroLeavesLoopOneNoDestroyedCompletionQueueToPoll() throws Exception {
        rdma = null;   // closed here: the fake's queue pair checks of close() do not apply (no QP was made)
        fake.connectFailure = new RdmaException("no route to 192.0.2.1 (the fake connection manager's refusal)");
        try (Rdma r = Rdma.builder().provider(fake).ioLoops(2).clock(clock::get).build()) {
            IoLoop zero = r.ioLoop(0), one = r.ioLoop(1);
            CompletableFuture<Connection> f = r.connectAsync(new InetSocketAddress("192.0.2.1", 7471),
                    ConnectionConfig.builder().timeout(TIMEOUT).build(), one);
            zero.poll();   // the connect: a CQ made, its source handed to loop 1, the connection manager refuses
            assertTrue(failureOf(f).getMessage().contains("no route to 192.0.2.1"), failureOf(f).getMessage());
            assertEquals(1, fake.completionQueues.size());
            one.poll();
            one.poll();
            assertEquals(0, fake.completionQueueUsesAfterClose.get(), "polls and arms of a destroyed CQ");
            if (fake.device.sharedDepth == 0) {
                assertTrue(fake.completionQueues.get(0).closed, "the failed connect's CQ is destroyed (on loop 1)");
            } else {
                assertFalse(fake.completionQueues.get(0).closed, "loop 1's shared CQ stays for its other connections");
                assertEquals(0, r.io().sharedOf(r.io().get(1)).reserved(), "the failed connect's room given back");
            }
        }
        assertEquals(0, fake.completionQueueUsesAfterClose.get(), "polls and arms of a destroyed CQ");
    }

    /** A connection closed before IO loop 0 ran its connect task makes nothing when the task runs. */
    @Test
    void aConnectionClosedBeforeItsConnectRanMakesNoCompletionQueue() throws Exception {
        rdma = null;
        Rdma r = Rdma.builder().provider(fake).ioLoops(2).clock(clock::get).build();
        CompletableFuture<Connection> f = r.connectAsync(new InetSocketAddress("192.0.2.1", 7471),
                ConnectionConfig.builder().timeout(TIMEOUT).build(), r.ioLoop(1));
        r.close();   // closes the connecting connection on loop 1 first, then runs loop 0's tasks
        assertInstanceOf(ConnectionClosedException.class, failureOf(f));
        for (FakeProvider.FakeCompletionQueue cq : fake.completionQueues) {
            assertTrue(cq.closed, "a CQ made for a connection already closed was left open");
        }
        assertEquals(0, fake.completionQueueUsesAfterClose.get(), "polls and arms of a destroyed CQ");
    }
}
