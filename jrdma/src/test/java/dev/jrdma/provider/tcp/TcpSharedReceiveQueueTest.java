package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.Errno;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * The tcp provider's shared receive queue on its own: a receive goes to one queue pair's share
 * whole, a claimed one comes back first when its queue pair fails (or completes flushed when the
 * pool filled meanwhile), the limit fires once per arming, and bad posts are refused.
 */
class TcpSharedReceiveQueueTest {
    private final TcpRegistrations registrations = new TcpRegistrations();

    private record Posted(TcpSharedReceiveQueue srq, MemorySegment memory, int lkey) {
        int post(long id, int slot) {
            return srq.postRecv(id, memory.address() + slot * 64L, 64, lkey);
        }
    }

    private Posted queue(Arena a, int capacity, Runnable onLimit) {
        MemorySegment memory = a.allocate(64L * 16, 64);
        TcpMemoryRegistration r = registrations.register(memory, AccessFlags.LOCAL_WRITE);
        return new Posted(new TcpSharedReceiveQueue(registrations, capacity, onLimit), memory, r.lkey());
    }

    @Test
    void eachReceiveGoesWholeToOneQueuePairInTheOrderPosted() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 4, () -> { });
            assertEquals(0, q.post(11, 0));
            assertEquals(0, q.post(12, 1));
            ReceiveSource one = q.srq().share(null), two = q.srq().share(null), three = q.srq().share(null);
            assertTrue(one.claim());
            assertTrue(one.claim(), "claiming again holds the same receive");
            assertTrue(two.claim());
            assertFalse(three.claim(), "two receives for three messages");
            assertEquals(q.memory().address(), one.address());
            assertEquals(q.memory().address() + 64, two.address());
            assertEquals(64, two.length());
            assertEquals(11, one.take());
            assertFalse(one.holds());
            assertEquals(12, two.take());
            assertEquals(0, q.srq().posted());
        }
    }

    @Test
    void aClaimedReceiveOfAFailedQueuePairGoesBackFirst() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 4, () -> { });
            q.post(21, 0);
            q.post(22, 1);
            ReceiveSource failing = q.srq().share(null), other = q.srq().share(null);
            assertTrue(failing.claim());
            TcpCompletionQueue cq = new TcpCompletionQueue(8, null);
            failing.flush(cq);
            assertFalse(failing.holds());
            assertEquals(0, cq.poll((id, st, op, len, imm, withImm) -> { }, 8), "nothing completes: the receive is the pool's");
            assertEquals(2, q.srq().posted());
            assertTrue(other.claim());
            assertEquals(21, other.take(), "the oldest again");
        }
    }

    @Test
    void aClaimedReceiveCompletesFlushedWhenThePoolFilledMeanwhile() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 2, () -> { });
            q.post(31, 0);
            q.post(32, 1);
            ReceiveSource failing = q.srq().share(null);
            assertTrue(failing.claim());
            assertEquals(0, q.post(33, 2));
            assertEquals(Errno.ENOMEM, q.post(34, 3), "full: capacity 2");
            TcpCompletionQueue cq = new TcpCompletionQueue(8, null);
            failing.flush(cq);
            List<long[]> got = new ArrayList<>();
            cq.poll((id, st, op, len, imm, withImm) -> got.add(new long[] {id, st, op}), 8);
            assertEquals(1, got.size());
            assertEquals(31, got.get(0)[0]);
            assertEquals(WorkCompletion.WR_FLUSH_ERR, got.get(0)[1]);
            assertEquals(WorkCompletion.OP_RECV, got.get(0)[2]);
        }
    }

    @Test
    void theLimitFiresOnceWhenFewerThanItAreLeftAndNotAgainUntilArmed() {
        AtomicInteger fired = new AtomicInteger();
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 4, fired::incrementAndGet);
            for (int i = 0; i < 4; i++) {
                q.post(40 + i, i);
            }
            q.srq().armLimit(2);
            ReceiveSource s = q.srq().share(null);
            s.claim();
            s.take();   // 3 left
            s.claim();
            s.take();   // 2 left: not fewer than 2
            assertEquals(0, fired.get());
            s.claim();
            s.take();   // 1 left
            assertEquals(1, fired.get());
            q.post(50, 4);
            s.claim();
            s.take();
            assertEquals(1, fired.get(), "one event per arming");
            q.srq().armLimit(3);
            q.post(51, 5);
            s.claim();   // 1 left of 2
            assertEquals(2, fired.get());
            assertThrows(IllegalArgumentException.class, () -> q.srq().armLimit(5));
        }
    }

    @Test
    void aPostOutsideEveryRegistrationIsRefused() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 4, () -> { });
            assertEquals(Errno.EINVAL, q.srq().postRecv(1, q.memory().address(), 64, q.lkey() + 1000), "a wrong key");
            assertEquals(Errno.EINVAL, q.srq().postRecv(1, q.memory().address() + 64L * 16 - 8, 64, q.lkey()),
                    "past the registration's end");
            q.srq().close();
            assertEquals(Errno.EINVAL, q.post(1, 0), "closed");
        }
    }

    @Test
    void aShareAtItsFairNumberTakesNoneOfTheReserveUntilOneOfItsOwnComesBack() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 8, () -> { });
            for (int i = 0; i < 8; i++) {
                assertEquals(0, q.post(100 + i, i));
            }
            assertTrue(q.srq().shareFairly(1, 2));
            ReceiveSource greedy = q.srq().share(null), honest = q.srq().share(null);
            List<Long> hoarded = new ArrayList<>();
            while (greedy.claim()) {
                hoarded.add(greedy.take());   // completed, its message never closed: the buffer stays out
            }
            assertEquals(6, hoarded.size(), "the greedy share takes the pool down to the reserve of 2, not below");
            assertEquals(6, q.srq().inUse(greedy));
            assertEquals(2, q.srq().posted());
            for (int round = 0; round < 10; round++) {
                assertTrue(honest.claim(), "a share holding none takes from the reserve (round " + round + ")");
                long id = honest.take();
                assertFalse(greedy.claim(), "the greedy share still waits");
                assertEquals(1, q.srq().inUse(honest));
                assertEquals(0, q.post(id, (int) (id - 100)), "the honest message is closed: its buffer goes back");
                assertEquals(0, q.srq().inUse(honest));
            }
            long back = hoarded.removeFirst();
            assertEquals(0, q.post(back, (int) (back - 100)));
            assertEquals(5, q.srq().inUse(greedy), "one of the greedy share's own came back");
            assertTrue(greedy.claim(), "5 held, 3 posted: above the reserve it may take one again");
            greedy.take();
            assertFalse(greedy.claim(), "and then, at the reserve, no more");
        }
    }

    @Test
    void aFairShareOutOfRangeIsRefusedByName() {
        try (Arena a = Arena.ofConfined()) {
            Posted q = queue(a, 4, () -> { });
            IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> q.srq().shareFairly(0, 1));
            assertTrue(none.getMessage().contains("a fair share of 0 receives"), none.getMessage());
            IllegalArgumentException big = assertThrows(IllegalArgumentException.class, () -> q.srq().shareFairly(1, 5));
            assertTrue(big.getMessage().contains("reserve of 5 on a shared receive queue of 4"), big.getMessage());
        }
    }
}
