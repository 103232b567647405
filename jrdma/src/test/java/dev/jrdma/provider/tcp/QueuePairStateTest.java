package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.spi.QueuePair;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tcp queue pair's two state machines only move forward: a late step (a start after the
 * owner closed, a peer-gone after an internal failure) cannot take a queue pair back, and each
 * ending is reported by exactly one caller, whichever thread gets there first.
 */
class QueuePairStateTest {

    @Test
    void theQpGoesInitRtsErrorClosedAndNeverBack() {
        QueuePairState s = new QueuePairState();
        assertEquals(QueuePair.STATE_INIT, s.verbsState());
        assertFalse(s.started());
        s.start();
        assertEquals(QueuePair.STATE_RTS, s.verbsState());
        assertTrue(s.started());
        assertTrue(s.requestError());
        assertFalse(s.requestError(), "asked once");
        assertEquals(QueuePair.STATE_ERR, s.verbsState());
        assertTrue(s.errorRequested());
        assertFalse(s.inError(), "not flushed until the progress thread enters ERROR");
        assertTrue(s.enterError());
        assertFalse(s.enterError(), "flushed once");
        assertTrue(s.close());
        assertFalse(s.close());
        s.start();
        assertEquals(QueuePairState.Qp.CLOSED, s.qp(), "a start after close does not reopen it");
        assertEquals(QueuePair.STATE_ERR, s.verbsState());
    }

    @Test
    void aConnectionThatFailsInItsHandshakeGoesFromInitToError() {
        QueuePairState s = new QueuePairState();
        assertTrue(s.requestError());
        s.start();   // the handshake finishes after all
        assertEquals(QueuePairState.Qp.ERROR_REQUESTED, s.qp(), "the owner's error request stands");
        assertTrue(s.started(), "the socket is the queue pair's");
    }

    @Test
    void theTransportEndsOnceAndAFailureAfterItIsNotASecondReport() {
        QueuePairState s = new QueuePairState();
        s.start();
        assertTrue(s.gone());
        assertFalse(s.gone(), "reported once");
        assertTrue(s.peerGone());
        assertEquals(QueuePairState.Transport.GONE, s.fail(), "the failure sees the peer was reported gone already");
        assertTrue(s.failed());
        assertEquals(QueuePairState.Transport.FAILED, s.fail());
        assertFalse(s.gone(), "FAILED is past GONE");
    }

    @Test
    void ofManyThreadsEndingOneQueuePairExactlyOneReports() throws InterruptedException {
        for (int round = 0; round < 200; round++) {
            QueuePairState s = new QueuePairState();
            s.start();
            AtomicInteger gone = new AtomicInteger(), errors = new AtomicInteger(), closes = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            Thread[] threads = new Thread[4];
            for (int i = 0; i < threads.length; i++) {
                threads[i] = Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    if (s.gone()) {
                        gone.incrementAndGet();
                    }
                    if (s.requestError()) {
                        errors.incrementAndGet();
                    }
                    if (s.close()) {
                        closes.incrementAndGet();
                    }
                });
            }
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertEquals(1, gone.get());
            assertEquals(1, closes.get());
            assertTrue(errors.get() <= 1, "at most one asked for the error state (a close may overtake it)");
        }
    }
}
