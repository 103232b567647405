package dev.jrdma.runtime;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What each idle strategy does with passes that found no work: when it sleeps, and for how long at most. */
class IdleStrategyTest {
    /** Counts the sleeps asked of it and the longest allowed. */
    private static final class CountingSleep implements IdleStrategy.Sleep {
        int sleeps;
        int maxMillis;

        @Override
        public void sleep(int maxMillis) {
            sleeps++;
            this.maxMillis = maxMillis;
        }
    }

    @Test
    void busySpinNeverSleeps() {
        IdleStrategy s = IdleWait.SPIN.newStrategy();
        CountingSleep sleep = new CountingSleep();
        for (int i = 0; i < 10_000; i++) {
            s.idle(sleep);
        }
        assertEquals(0, sleep.sleeps);
    }

    @Test
    void sleepingSleepsAtTheFirstIdlePassForAtMostTheTimersPeriod() {
        IdleStrategy s = IdleWait.SLEEP.newStrategy();
        CountingSleep sleep = new CountingSleep();
        s.idle(sleep);
        assertEquals(1, sleep.sleeps);
        assertEquals(DutyCycle.MAX_SLEEP_MS, sleep.maxMillis);
    }

    @Test
    void spinThenSleepSpinsForItsTimeThenSleepsAndSpinsAgainAfterWork() {
        long spin = TimeUnit.MILLISECONDS.toNanos(20);
        IdleStrategy s = new SpinThenSleepIdle(spin);
        CountingSleep sleep = new CountingSleep();
        long start = System.nanoTime();
        while (sleep.sleeps == 0) {
            s.idle(sleep);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "never slept");
        }
        assertTrue(System.nanoTime() - start >= spin, "slept before its spin was over");
        s.reset();   // work: the next idle pass spins again
        s.idle(sleep);
        s.idle(sleep);
        assertEquals(1, sleep.sleeps, "spins again after work");
    }

    @Test
    void yieldingNeverSleeps() {
        IdleStrategy s = IdleWait.YIELD.newStrategy();
        CountingSleep sleep = new CountingSleep();
        for (int i = 0; i < 1_000; i++) {
            s.idle(sleep);
        }
        assertEquals(0, sleep.sleeps);
        assertTrue(!IdleWait.YIELD.sleeps() && !IdleWait.SPIN.sleeps(), "the never-sleeping strategies say so");
    }

    @Test
    void backoffSpinsThenYieldsForItsCountsThenSleepsAndStartsAgainAfterWorkOrASleep() {
        IdleStrategy s = IdleWait.backoff(5, 3).newStrategy();
        CountingSleep sleep = new CountingSleep();
        for (int i = 0; i < 8; i++) {
            s.idle(sleep);
        }
        assertEquals(0, sleep.sleeps, "5 spins and 3 yields before the first sleep");
        s.idle(sleep);
        assertEquals(1, sleep.sleeps);
        assertEquals(DutyCycle.MAX_SLEEP_MS, sleep.maxMillis);
        for (int i = 0; i < 8; i++) {
            s.idle(sleep);
        }
        assertEquals(1, sleep.sleeps, "after a sleep it backs off from the start");
        s.reset();   // work
        for (int i = 0; i < 8; i++) {
            s.idle(sleep);
        }
        assertEquals(1, sleep.sleeps, "after work it backs off from the start");
        s.idle(sleep);
        assertEquals(2, sleep.sleeps);
        IdleStrategy none = IdleWait.backoff(0, 0).newStrategy();
        none.idle(sleep);
        assertEquals(3, sleep.sleeps, "no spins and no yields: it sleeps at once");
        assertTrue(IdleWait.backoff(0, 0).sleeps());
    }
}
