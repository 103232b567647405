package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;

import org.junit.jupiter.api.Test;

/** The buckets of {@link LatencyHistogram} and the summary it makes of them. */
class LatencyHistogramTest {
    @Test
    void everyValueLandsInABucketWhoseHighestValueIsWithinAnEighthAbove() {
        Random r = new Random(7);
        for (int i = 0; i < 100_000; i++) {
            long v = i < 4096 ? i : r.nextLong(1L << 40);
            int b = LatencyHistogram.bucket(v);
            long high = LatencyHistogram.highest(b);
            assertTrue(high >= v && high <= v + v / 8 + 1, v + " in bucket " + b + " up to " + high);
            assertTrue(b == 0 || LatencyHistogram.highest(b - 1) < v, v + ": the bucket below ends below it");
        }
        assertEquals(LatencyHistogram.bucket(1L << 41), LatencyHistogram.bucket(Long.MAX_VALUE), "longer ones share the last");
        assertEquals(0, LatencyHistogram.bucket(-5), "a clock step backwards counts as 0");
    }

    @Test
    void theSummaryHasTheExactExtremesAndMeanAndBucketedPercentiles() {
        LatencyHistogram h = new LatencyHistogram();
        assertEquals(ConnectionStatistics.Latency.NONE, h.summary());
        for (int i = 1; i <= 100; i++) {
            h.record(i * 1000L);   // 1 us .. 100 us
        }
        ConnectionStatistics.Latency l = h.summary();
        assertEquals(100, l.samples());
        assertEquals(1000, l.minNanos());
        assertEquals(100_000, l.maxNanos());
        assertEquals(50_500, l.meanNanos());
        assertTrue(l.p50Nanos() >= 50_000 && l.p50Nanos() <= 50_000 * 9 / 8, l.toString());
        assertTrue(l.p99Nanos() >= 99_000 && l.p99Nanos() <= 100_000, "at most the largest seen: " + l);
    }
}
