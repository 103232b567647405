package dev.jrdma.provider.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * When an evicted sender's address handle may be destroyed (no hardware needed): exactly once,
 * by the eviction when no send holds it or by the last send to complete, and never while a send
 * holds it; no send takes it after the eviction.
 */
class AddressHandleUsesTest {
    @Test
    void theLastSendOfAnEvictedHandleDestroysIt() {
        AddressHandleUses u = new AddressHandleUses();
        assertTrue(u.hold());
        assertTrue(u.hold());
        assertFalse(u.retire(), "two sends hold it: the eviction leaves it to them");
        assertTrue(u.retired());
        assertFalse(u.hold(), "no send takes an evicted handle");
        assertEquals(2, u.held());
        assertFalse(u.release(), "one send still holds it");
        assertTrue(u.release(), "the last send destroys it");
        assertEquals(0, u.held());
    }

    @Test
    void anEvictionWithNoSendInFlightDestroysAtOnce() {
        AddressHandleUses u = new AddressHandleUses();
        assertTrue(u.hold());
        assertFalse(u.release(), "not evicted: it stays");
        assertTrue(u.retire(), "evicted, held by none: destroy now");
        assertFalse(u.hold());
    }

    @Test
    void aReleaseWithoutAHoldIsAnError() {
        AddressHandleUses u = new AddressHandleUses();
        IllegalStateException e = assertThrows(IllegalStateException.class, u::release);
        assertTrue(e.getMessage().contains("released more often than held"), e.getMessage());
    }

    /**
     * Two posters hold and release as fast as they can while the table evicts the handle: one
     * destroy is signalled, in all of 200 rounds, and at that moment no send holds it.
     */
    @Test
    void concurrentSendsAndAnEvictionDestroyExactlyOnceAndNeverUnderASend() throws Exception {
        int rounds = 200;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (int r = 0; r < rounds && System.nanoTime() < deadline; r++) {
            AddressHandleUses u = new AddressHandleUses();
            AtomicInteger inUse = new AtomicInteger();
            AtomicInteger destroys = new AtomicInteger();
            AtomicInteger destroyedUnderASend = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> posters = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                posters.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    for (int i = 0; i < 2_000; i++) {
                        if (!u.hold()) {
                            return;   // evicted: the endpoint would renew
                        }
                        inUse.incrementAndGet();
                        inUse.decrementAndGet();   // the send completed
                        if (u.release()) {
                            if (inUse.get() != 0) {
                                destroyedUnderASend.incrementAndGet();
                            }
                            destroys.incrementAndGet();
                        }
                    }
                }));
            }
            go.countDown();
            Thread.onSpinWait();
            if (u.retire()) {
                if (inUse.get() != 0) {
                    destroyedUnderASend.incrementAndGet();
                }
                destroys.incrementAndGet();
            }
            for (Thread t : posters) {
                t.join(TimeUnit.SECONDS.toMillis(10));
                assertFalse(t.isAlive(), "a poster ended");
            }
            assertEquals(1, destroys.get(), "round " + r + ": destroys signalled");
            assertEquals(0, destroyedUnderASend.get(), "round " + r + ": destroyed while a send held it");
            assertEquals(0, u.held(), "round " + r + ": holds left");
            assertFalse(u.hold(), "round " + r + ": a hold after the eviction");
        }
    }
}
