package dev.jrdma;

import dev.jrdma.FakeProvider.FakeQueuePair;
import dev.jrdma.FakeProvider.Posted;
import dev.jrdma.engine.io.SharedCompletions;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.WorkCompletion;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every case of {@link ConnectionCoreTest} again, with the connections of the IO thread sharing
 * completion queues ({@code Device.sharedCompletionQueueDepth}, as verbs does): the connection's
 * completions then come through the thread's {@link SharedCompletions}, found by queue pair number,
 * and its own source is polled only during the teardown. Then what only sharing has: several
 * connections on one queue, each given only its own completions, and the room each takes.
 */
class SharedCompletionQueueCoreTest extends ConnectionCoreTest {
    private static final int SHARED = 1 << 12;
    /** A connection's entries with {@link #config}: 4 sends, the teardown's marker, 2 receives. */
    private static final int ENTRIES = 4 + 1 + 2;
    private static final InetSocketAddress PEER = new InetSocketAddress("127.0.0.1", 7471);
    private static final RemoteRegion REMOTE = new RemoteRegion(0x10_0000, 4096, 77,
            AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC);

    SharedCompletionQueueCoreTest() {
        fake.device.sharedDepth = SHARED;
    }

    private static ConnectionConfig config(int sendDepth) {
        return ConnectionConfig.builder().sendQueueDepth(sendDepth).receiveQueueDepth(2).receiveBufferSize(256)
                .timeout(Duration.ofSeconds(2)).build();
    }

    private Rdma inline() {
        return Rdma.builder().provider(fake).ioThreads(Rdma.INLINE).build();
    }

    private FakeQueuePair nextQueuePair() throws InterruptedException {
        FakeQueuePair q = fake.queuePairs.poll(5, TimeUnit.SECONDS);
        assertTrue(q != null, "no queue pair was made");
        return q;
    }

    private static void settle(Rdma r) {
        while (r.poll() > 0) {
            Thread.onSpinWait();
        }
    }

    private static SharedCompletions shared(Rdma r) {
        return r.io().sharedOf(r.io().get(0));
    }

    @Test
    void connectionsOfOneThreadShareOneQueueAndEachIsToldOnlyOfItsOwnOperations() throws Exception {
        try (Rdma r = inline()) {
            Connection a = r.connect(PEER, config(4));
            FakeQueuePair qa = nextQueuePair();
            Connection b = r.connect(PEER, config(4));
            FakeQueuePair qb = nextQueuePair();
            assertSame(qa.cq, qb.cq, "both queue pairs complete on one CQ");
            assertEquals(1, fake.completionQueues.size(), "one CQ made for both connections");
            assertEquals(2 * ENTRIES, shared(r).reserved());

            Counting<Long> ha = new Counting<>(), hb = new Counting<>();
            for (int i = 0; i < 4; i++) {
                a.fetchAndAdd(REMOTE, 1, i, ha);
                b.fetchAndAdd(REMOTE, 1, i, hb);
            }
            // Interleaved in the one queue: b's first, then a's, one by one.
            for (int i = 0; i < 4; i++) {
                Posted pb = qb.nextSend(), pa = qa.nextSend();
                qb.completeAtomic(pb, 200 + i);
                qa.completeAtomic(pa, 100 + i);
            }
            settle(r);
            assertEquals(4, ha.calls.get());
            assertEquals(4, hb.calls.get());
            for (int i = 0; i < 4; i++) {
                assertEquals(100 + i, ha.values[i], "a's operation " + i + " got a's value");
                assertEquals(200 + i, hb.values[i], "b's operation " + i + " got b's value");
                assertNull(ha.failures[i]);
                assertNull(hb.failures[i]);
            }

            a.close();
            assertEquals(ConnectionState.CLOSED, a.state());
            assertEquals(ENTRIES, shared(r).reserved(), "a's room given back once its queue pair is gone");
            assertFalse(qa.cq.closed, "the shared CQ stays for b");

            // A completion of a's queue pair number after a left (a device may still hold one): dropped, counted, b unharmed.
            qa.cq.add(qa.qpNum(), 0, WorkCompletion.SUCCESS, WorkCompletion.OP_SEND, 0, 0, false);
            b.fetchAndAdd(REMOTE, 1, 4, hb);
            qb.completeAtomic(qb.nextSend(), 204);
            settle(r);
            assertEquals(1, shared(r).strays(), "the completion of the queue pair that left");
            assertEquals(5, hb.calls.get());
            assertEquals(204, hb.values[4]);
            assertEquals(4, ha.calls.get(), "a was told of nothing more");
            assertEquals(ConnectionState.ESTABLISHED, b.state());
        }
        assertTrue(fake.completionQueues.get(0).closed, "the shared CQ is destroyed when the Rdma closes");
        assertEquals(0, fake.completionQueueUsesAfterClose.get(), "polls and arms of a destroyed CQ");
    }

    @Test
    void aQueueTakesConnectionsUpToItsEntriesThenANewOneIsMadeAndRoomGivenBackIsTakenAgain() throws Exception {
        fake.device.sharedDepth = 2 * ENTRIES;   // two connections fill a queue
        try (Rdma r = inline()) {
            Connection a = r.connect(PEER, config(4));
            FakeQueuePair qa = nextQueuePair();
            r.connect(PEER, config(4));
            FakeQueuePair qb = nextQueuePair();
            r.connect(PEER, config(4));
            FakeQueuePair qc = nextQueuePair();
            assertSame(qa.cq, qb.cq);
            assertNotSame(qa.cq, qc.cq, "the third connection does not fit the first queue");
            assertEquals(2, shared(r).queues());

            a.close();
            r.connect(PEER, config(4));
            FakeQueuePair qd = nextQueuePair();
            assertSame(qa.cq, qd.cq, "the room a gave back is taken by the next connection");
            assertEquals(2, shared(r).queues(), "no third queue");

            // More entries than a shared queue may have: a CQ of its own, destroyed with the connection.
            Connection big = r.connect(PEER, config(2 * ENTRIES));
            FakeQueuePair qe = nextQueuePair();
            assertNotSame(qa.cq, qe.cq);
            assertNotSame(qc.cq, qe.cq);
            assertEquals(2, shared(r).queues());
            Counting<Long> h = new Counting<>();
            big.fetchAndAdd(REMOTE, 1, 0, h);
            qe.completeAtomic(qe.nextSend(), 7);
            settle(r);
            assertEquals(1, h.calls.get());
            assertEquals(7, h.values[0]);
            big.close();
            assertTrue(qe.cq.closed, "its own CQ is destroyed with the connection");
            assertFalse(qa.cq.closed);
            assertEquals(3 * ENTRIES, shared(r).reserved());
        }
        assertEquals(0, fake.completionQueueUsesAfterClose.get(), "polls and arms of a destroyed CQ");
    }
}
