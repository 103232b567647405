package dev.jrdma.perf;

import java.util.Arrays;

/**
 * Statistics of latency samples, exact: every sample is kept (as perftest does), sorted once.
 * perftest's columns (t_min, t_max, t_typical = the median, t_avg, t_stdev, 99% and 99.9%) and
 * p50, p99, p99.9 and max, all in microseconds.
 */
public record LatencyStats(int count, double min, double max, double typical, double avg, double stdev,
                           double p50, double p99, double p999) {

    /** From {@code ns} samples, each divided by {@code divisor} (2 for a round trip reported one way). */
    public static LatencyStats of(long[] ns, int divisor) {
        if (ns.length == 0) {
            throw new IllegalArgumentException("no samples");
        }
        long[] s = ns.clone();
        Arrays.sort(s);
        double sum = 0;
        for (long v : s) {
            sum += v;
        }
        double mean = sum / s.length;
        double sq = 0;
        for (long v : s) {
            sq += (v - mean) * (v - mean);
        }
        double d = divisor * 1000.0;
        return new LatencyStats(s.length, s[0] / d, s[s.length - 1] / d, at(s, 0.5) / d, mean / d,
                Math.sqrt(sq / s.length) / d, at(s, 0.5) / d, at(s, 0.99) / d, at(s, 0.999) / d);
    }

    /** The value below which a fraction {@code q} of the sorted samples lies (nearest rank). */
    private static long at(long[] sorted, double q) {
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
}
