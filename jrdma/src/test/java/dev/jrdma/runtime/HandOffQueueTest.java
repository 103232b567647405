package dev.jrdma.runtime;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The IO loop's many-to-one hand-off: order per producer, the overflow past the ring, emptiness. */
class HandOffQueueTest {

    @Test
    void oneProducerComesOutInOrderThroughTheRingAndPastItIntoTheOverflow() {
        HandOffQueue<Integer> q = new HandOffQueue<>(4);
        assertTrue(q.isEmpty());
        for (int i = 0; i < 10; i++) {
            q.offer(i);   // 4 in the ring, 6 in the overflow
        }
        assertFalse(q.isEmpty());
        for (int i = 0; i < 3; i++) {
            assertEquals(i, q.poll());
        }
        q.offer(10);   // room in the ring now, but the overflow holds older ones: behind them
        List<Integer> rest = new ArrayList<>();
        Integer e;
        while ((e = q.poll()) != null) {
            rest.add(e);
        }
        assertEquals(List.of(3, 4, 5, 6, 7, 8, 9, 10), rest);
        assertTrue(q.isEmpty());
        q.offer(11);   // overflow empty again: the ring
        assertEquals(11, q.poll());
        assertNull(q.poll());
    }

    @Test
    void manyProducersLoseNothingAndKeepEachOnesOrder() throws Exception {
        int producers = 4;
        int each = 200_000;
        HandOffQueue<long[]> q = new HandOffQueue<>(64);   // small: the overflow is used too
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int id = p;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException ie) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    q.offer(new long[] {id, i});
                }
            }));
        }
        start.countDown();
        long[] next = new long[producers];
        long taken = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (taken < (long) producers * each) {
            long[] e = q.poll();
            if (e == null) {
                assertTrue(System.nanoTime() < deadline, "took " + taken + " of " + producers * each + " in 60 s");
                Thread.onSpinWait();
                continue;
            }
            assertEquals(next[(int) e[0]], e[1], "producer " + e[0] + "'s next");
            next[(int) e[0]]++;
            taken++;
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(10));
        }
        assertNull(q.poll());
        assertTrue(q.isEmpty());
    }

    @Test
    void refusesNullsAndCapacitiesThatAreNoPowerOfTwo() {
        assertThrows(NullPointerException.class, () -> new HandOffQueue<Object>().offer(null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new HandOffQueue<Object>(100));
        assertTrue(e.getMessage().contains("100"), e.getMessage());
    }
}
