package dev.jrdma.engine.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/** The per-source table on a clock of its own: allowances, the doubling wait, forgetting, IPv6 /64s, the bound. */
class SourcePenaltiesTest {
    private static final long MS = 1_000_000L;
    private final AtomicLong now = new AtomicLong(1_000 * MS);

    private SourcePenalties table(int maxSources) {
        return new SourcePenalties(4, 16, 100 * MS, 10_000 * MS, 60_000 * MS, maxSources, now::get);
    }

    @Test
    void fourWrongTokensAreFreeThenTheWaitDoublesToItsMaximum() throws Exception {
        SourcePenalties p = table(16);
        InetAddress a = InetAddress.getByName("192.0.2.7");
        for (int i = 0; i < 4; i++) {
            p.authFailed(a);
            assertEquals(0, p.waitNanos(a), "failure " + (i + 1) + " of 4 free");
        }
        long[] expected = {100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000};
        for (long ms : expected) {
            p.authFailed(a);
            assertEquals(ms * MS, p.waitNanos(a));
        }
        assertEquals(0, p.waitNanos(InetAddress.getByName("192.0.2.8")), "another address waits for nothing");
        now.addAndGet(10_000 * MS);
        assertEquals(0, p.waitNanos(a), "the wait ends");
        assertEquals(13, p.authFailures());
        assertTrue(p.refusedWhileWaiting() >= 9);
    }

    @Test
    void offencesHaveTheirOwnAllowanceAndARecordIsForgottenAfterAMinute() throws Exception {
        SourcePenalties p = table(16);
        InetAddress a = InetAddress.getByName("198.51.100.1");
        for (int i = 0; i < 16; i++) {
            p.offended(a);
        }
        assertEquals(0, p.waitNanos(a), "16 offences free");
        p.offended(a);
        assertEquals(100 * MS, p.waitNanos(a));
        now.addAndGet(61_000 * MS);
        p.offended(a);
        assertEquals(0, p.waitNanos(a), "forgotten 60 s after the last failure: a fresh allowance");
    }

    @Test
    void anIpv6SourceIsItsSlash64() throws Exception {
        SourcePenalties p = table(16);
        for (int i = 0; i < 5; i++) {
            p.authFailed(InetAddress.getByName("2001:db8:1:2::" + Integer.toHexString(i + 1)));
        }
        assertEquals(100 * MS, p.waitNanos(InetAddress.getByName("2001:db8:1:2:ffff::9")), "one /64, one source");
        assertEquals(0, p.waitNanos(InetAddress.getByName("2001:db8:1:3::1")), "another /64");
    }

    @Test
    void theTableIsBoundedAndKeepsWaitingSourcesOverCleanOnes() throws Exception {
        SourcePenalties p = table(4);
        InetAddress waiting = InetAddress.getByName("203.0.113.1");
        for (int i = 0; i < 5; i++) {
            p.authFailed(waiting);
        }
        for (int i = 2; i < 100; i++) {
            p.authFailed(InetAddress.getByName("203.0.113." + i));   // one failure each: free, not waiting
        }
        assertEquals(4, p.sources());
        assertEquals(100 * MS, p.waitNanos(waiting), "a flood of addresses does not wash a waiting source out");
    }

    @Test
    void aHugeBaseDelayNeverWrapsBelowTheMaximum() throws Exception {
        long max = 3_600_000 * MS;
        SourcePenalties p = new SourcePenalties(0, 0, (1L << 24) + 1, max, max, 4, now::get);
        InetAddress a = InetAddress.getByName("192.0.2.1");
        for (int i = 0; i < 80; i++) {
            p.authFailed(a);
            long w = p.waitNanos(a);
            assertTrue(w > 0 && w <= max, "failure " + i + ": wait " + w);
        }
        assertEquals(max, p.waitNanos(a));
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertThrows(IllegalArgumentException.class, () -> new SourcePenalties(-1, 0, 1, 1, 1, 1, now::get));
        assertThrows(IllegalArgumentException.class, () -> new SourcePenalties(0, 0, 0, 1, 1, 1, now::get));
        assertThrows(IllegalArgumentException.class, () -> new SourcePenalties(0, 0, 2, 1, 2, 1, now::get));
        assertThrows(IllegalArgumentException.class, () -> new SourcePenalties(0, 0, 1, 1, 1, 0, now::get));
    }
}
