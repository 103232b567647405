package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/** The policy's values: the backoff's growth and cap, the jitter's bounds, and bad input named. */
class ReconnectPolicyTest {
    private static final long MS = 1_000_000;

    @Test
    void delaysDoubleUpToTheMaximumWithoutJitter() {
        ReconnectPolicy p = ReconnectPolicy.backoff(Duration.ofMillis(10), Duration.ofMillis(70)).withJitter(0);
        assertEquals(10 * MS, p.delayNanos(1));
        assertEquals(20 * MS, p.delayNanos(2));
        assertEquals(40 * MS, p.delayNanos(3));
        assertEquals(70 * MS, p.delayNanos(4));
        assertEquals(70 * MS, p.delayNanos(1_000_000), "no overflow however many attempts");
    }

    @Test
    void jitterTakesOffAtMostItsPart() {
        ReconnectPolicy p = ReconnectPolicy.backoff(Duration.ofMillis(100), Duration.ofMillis(100)).withJitter(0.25);
        long least = Long.MAX_VALUE, most = 0;
        for (int i = 0; i < 1000; i++) {
            long d = p.delayNanos(1);
            least = Math.min(least, d);
            most = Math.max(most, d);
        }
        assertTrue(least >= 75 * MS && most <= 100 * MS, "delays from " + least + " to " + most + " ns");
        assertTrue(most > least, "1000 delays all the same: no jitter");
    }

    @Test
    void defaultsAndLimits() {
        ReconnectPolicy p = ReconnectPolicy.backoff(Duration.ofMillis(1), Duration.ofSeconds(1));
        assertTrue(p.reconnects());
        assertFalse(ReconnectPolicy.NEVER.reconnects());
        assertEquals(Integer.MAX_VALUE, p.maxAttempts());
        assertEquals(3, p.withMaxAttempts(3).maxAttempts());
        assertEquals(Duration.ofSeconds(9), p.withGiveUpAfter(Duration.ofSeconds(9)).giveUpAfter());
        assertEquals(Duration.ofSeconds(ReconnectPolicy.DEFAULT_HEALTHY_AFTER_SECONDS), p.healthyAfter());
        assertEquals(Duration.ofSeconds(5), p.healthyAfter(), "the documented default");
        assertEquals(Duration.ofMillis(250), p.withHealthyAfter(Duration.ofMillis(250)).healthyAfter());
        assertEquals(Duration.ofMillis(250), p.withHealthyAfter(Duration.ofMillis(250)).withMaxAttempts(2).withJitter(0)
                .withGiveUpAfter(Duration.ofSeconds(1)).healthyAfter(), "every with... keeps it");
        assertTrue(p.toString().contains("healthy after PT5S"), p.toString());
        assertEquals(ReconnectPolicy.NEVER, ConnectionConfig.defaults().reconnect());
        ConnectionConfig c = ConnectionConfig.builder().reconnect(p).build();
        assertEquals(p, c.reconnect());
        assertEquals(p, c.toBuilder().build().reconnect(), "toBuilder keeps the policy");
        assertTrue(c.toString().contains("reconnect="), c.toString());
    }

    @Test
    void badValuesAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ReconnectPolicy.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("max"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ReconnectPolicy.backoff(Duration.ofMillis(-1), Duration.ZERO));
        ReconnectPolicy p = ReconnectPolicy.backoff(Duration.ZERO, Duration.ofSeconds(1));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> p.withMaxAttempts(0)).getMessage().contains("maxAttempts"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> p.withJitter(1.5)).getMessage().contains("jitter"));
        assertThrows(IllegalArgumentException.class, () -> p.withJitter(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> p.withGiveUpAfter(Duration.ZERO));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> p.withGiveUpAfter(Duration.ofDays(365L * 1000)))
                .getMessage().contains("PT8760000H"), "a time the attempts' clock cannot count is named");
        for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofMillis(-1), Duration.ofDays(365L * 1000)}) {
            IllegalArgumentException h = assertThrows(IllegalArgumentException.class, () -> p.withHealthyAfter(bad));
            assertTrue(h.getMessage().contains("healthyAfter") && h.getMessage().contains(bad.toString()), h.getMessage());
        }
        assertThrows(NullPointerException.class, () -> p.withHealthyAfter(null));
        assertThrows(IllegalStateException.class, () -> ReconnectPolicy.NEVER.withHealthyAfter(Duration.ofSeconds(1)));
        assertThrows(IllegalStateException.class, () -> ReconnectPolicy.NEVER.withMaxAttempts(2));
        assertThrows(NullPointerException.class, () -> ConnectionConfig.builder().reconnect(null));
        assertThrows(NullPointerException.class, () -> ConnectionConfig.builder().reconnect(p, null));
    }
}
