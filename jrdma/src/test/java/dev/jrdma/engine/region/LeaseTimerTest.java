package dev.jrdma.engine.region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** The lease timer: its thread is made by the first lease, a failing end does not stop it, none is scheduled once closed. */
class LeaseTimerTest {
    @Test
    void aLeaseEndsOnTheTimersThreadAndAFailingEndDoesNotStopTheNext() throws Exception {
        LeaseTimer timer = new LeaseTimer("dev1", () -> { });
        try {
            CountDownLatch ended = new CountDownLatch(1);
            String[] thread = new String[1];
            timer.schedule(Duration.ZERO, () -> {
                throw new IllegalStateException("this end fails");
            });
            timer.schedule(Duration.ofMillis(10), () -> {
                thread[0] = Thread.currentThread().getName();
                ended.countDown();
            });
            assertTrue(ended.await(10, TimeUnit.SECONDS), "the second lease ended");
            assertEquals("jrdma-leases-dev1", thread[0]);
        } finally {
            timer.close();
        }
    }

    @Test
    void whenItsOwnerIsClosedNoLeaseIsScheduled() {
        AtomicBoolean closed = new AtomicBoolean();
        LeaseTimer timer = new LeaseTimer("dev2", () -> {
            if (closed.get()) {
                throw new IllegalStateException("this Rdma instance is closed");
            }
        });
        closed.set(true);
        AtomicBoolean ran = new AtomicBoolean();
        assertThrows(IllegalStateException.class, () -> timer.schedule(Duration.ZERO, () -> ran.set(true)));
        timer.close();   // nothing was started: nothing to stop
        assertFalse(ran.get());
    }

    @Test
    void closeStopsTheThreadAndALeaseNotYetDueNeverEnds() throws Exception {
        LeaseTimer timer = new LeaseTimer("dev3", () -> { });
        AtomicBoolean ran = new AtomicBoolean();
        timer.schedule(Duration.ofSeconds(30), () -> ran.set(true));
        timer.close();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("jrdma-leases-dev3")) {
                t.join(10_000);
                assertFalse(t.isAlive(), "the timer's thread ended");
            }
        }
        assertFalse(ran.get());
    }
}
