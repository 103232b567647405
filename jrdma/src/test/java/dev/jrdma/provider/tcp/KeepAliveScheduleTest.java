package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/**
 * The keep-alive's timing, on a clock the test drives: looks every sixty-fourth of the interval,
 * as the IO thread's idle timer makes them (it makes them every sixteenth of a quarter).
 */
class KeepAliveScheduleTest {
    static final long INTERVAL = 15_000_000_000L;
    static final long LOOK = INTERVAL / 64;

    @Test
    void connectionsOpenedTogetherSpreadTheirFirstKeepAlivesOverTheInterval() {
        int n = 1600;
        int[] perSixteenth = new int[16];
        SplittableRandom random = new SplittableRandom(46);
        for (int i = 0; i < n; i++) {
            KeepAliveSchedule k = new KeepAliveSchedule(INTERVAL, 0, random.split());
            long at = firstKeepAlive(k, 0, 0);
            assertTrue(at > 0 && at <= INTERVAL + LOOK, "connection " + i + ": its first keep-alive at " + at
                    + " ns, after at most the interval (" + INTERVAL + " ns) and one look");
            perSixteenth[(int) Math.min(15, (at - 1) / (INTERVAL / 16))]++;
        }
        // Spread evenly, each sixteenth has about n/16 = 100; all in one look is what they did before.
        for (int s = 0; s < 16; s++) {
            assertTrue(perSixteenth[s] <= 2 * n / 16, "first keep-alives in each sixteenth of the interval: "
                    + Arrays.toString(perSixteenth));
        }
    }

    @Test
    void aQuietConnectionThenKeepsTheIntervalAndAPeerThatSaysNothingGetsOne() {
        KeepAliveSchedule k = new KeepAliveSchedule(INTERVAL, 0, new SplittableRandom(1));
        long first = firstKeepAlive(k, 0, 10);
        k.sent(first, 11);
        k.heard();   // the peer answered
        long second = firstKeepAlive(k, first + LOOK, 11);
        assertTrue(second - first >= INTERVAL && second - first <= INTERVAL + LOOK, "then one an interval later: "
                + first + " and " + second);
        k.sent(second, 12);
        // The peer said nothing since: no more, however long the quiet lasts.
        for (long t = second + LOOK; t < second + 4 * INTERVAL; t += LOOK) {
            assertFalse(k.due(t, 12, true, true), "a keep-alive to a silent peer at " + t);
        }
    }

    @Test
    void trafficMovesTheNextKeepAliveAndABusyOrRefusingStreamSendsNone() {
        KeepAliveSchedule k = new KeepAliveSchedule(INTERVAL, 0, new SplittableRandom(7));
        long t = 0;
        for (int i = 0; i < 200; i++, t += LOOK) {
            assertFalse(k.due(t, i, true, true), "sent " + i + " bytes in all: traffic, no keep-alive");
        }
        for (int i = 0; i < 200; i++, t += LOOK) {
            assertFalse(k.due(t, 199, false, true), "the transmitter still has bytes to send: no keep-alive");
        }
        long busyUntil = t - LOOK;
        for (int i = 0; i < 200; i++, t += LOOK) {
            assertFalse(k.due(t, 199, true, false), "the stream may not carry one (refusing): no keep-alive");
        }
        assertTrue(t - busyUntil > INTERVAL, "the test's clock");
        assertTrue(k.due(t, 199, true, true), "the transmitter quiet for " + (t - busyUntil) + " ns, and it may talk: one is due");
    }

    @Test
    void aKeepAliveIsNeverLaterThanTheIntervalAfterTheLastSend() {
        SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 500; i++) {
            KeepAliveSchedule k = new KeepAliveSchedule(INTERVAL, 0, random.split());
            long start = random.nextLong(INTERVAL);
            long t = 0;
            for (; t < start; t += LOOK) {
                assertFalse(k.due(t, t / LOOK, true, true));   // traffic until start
            }
            long lastSend = t - LOOK;
            long at = firstKeepAlive(k, t, (t - LOOK) / LOOK);
            assertTrue(at - lastSend <= INTERVAL + LOOK, "traffic until " + lastSend + ", the keep-alive at " + at);
        }
    }

    /** Looks from {@code from} on, the transmitter's total fixed at {@code sent}, until one is due; returns when. */
    private static long firstKeepAlive(KeepAliveSchedule k, long from, long sent) {
        for (long t = from; t < from + 3 * INTERVAL; t += LOOK) {
            if (k.due(t, sent, true, true)) {
                return t;
            }
        }
        throw new AssertionError("no keep-alive within three intervals of " + from);
    }
}
