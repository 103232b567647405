package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class IdleBackoffTest {
    @Test
    void sleepsDoubleUpToTheBoundAndStartOverAfterReset() {
        IdleBackoff b = new IdleBackoff(1_000_000);
        assertEquals(200_000, b.nextNanos());
        b.idle();
        assertEquals(400_000, b.nextNanos());
        b.idle();
        assertEquals(800_000, b.nextNanos());
        b.idle();
        assertEquals(1_000_000, b.nextNanos());   // bounded
        b.idle();
        assertEquals(1_000_000, b.nextNanos());
        b.reset();
        assertEquals(200_000, b.nextNanos());
    }

    @Test
    void aBoundBelowTheFirstSleepIsTheFirstSleep() {
        IdleBackoff b = new IdleBackoff(10);
        b.idle();
        assertEquals(IdleBackoff.FIRST_NANOS, b.nextNanos());
    }
}
