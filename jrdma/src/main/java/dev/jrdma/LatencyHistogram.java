package dev.jrdma;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Latencies in nanoseconds, counted in buckets eight to a power of two (each bucket 12.5 % wide,
 * as HdrHistogram with one significant digit), up to 2^40 ns (18 minutes; longer ones count in the
 * last bucket). One thread records, with plain stores; any thread reads, with opaque loads, and
 * sees every count whole, perhaps a moment behind.
 */
final class LatencyHistogram {
    private static final int SUB_BITS = 3, SUB = 1 << SUB_BITS, MAX_EXPONENT = 40;
    private static final int BUCKETS = (MAX_EXPONENT - SUB_BITS + 2) * SUB;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle SUM, MIN, MAX, COUNT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SUM = l.findVarHandle(LatencyHistogram.class, "sum", long.class);
            MIN = l.findVarHandle(LatencyHistogram.class, "min", long.class);
            MAX = l.findVarHandle(LatencyHistogram.class, "max", long.class);
            COUNT = l.findVarHandle(LatencyHistogram.class, "count", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long[] buckets = new long[BUCKETS];
    private long count, sum, max;
    private long min = Long.MAX_VALUE;

    /** The bucket of {@code nanos}: values below 8 each have one; above, 8 per power of two. */
    static int bucket(long nanos) {
        if (nanos < SUB) {
            return (int) Math.max(0, nanos);
        }
        int exponent = 63 - Long.numberOfLeadingZeros(nanos);
        if (exponent > MAX_EXPONENT) {
            return BUCKETS - 1;
        }
        int sub = (int) (nanos >>> (exponent - SUB_BITS)) & (SUB - 1);
        return (exponent - SUB_BITS + 1) * SUB + sub;
    }

    /** The largest value that counts in {@code bucket}. */
    static long highest(int bucket) {
        if (bucket < SUB) {
            return bucket;
        }
        int exponent = bucket / SUB + SUB_BITS - 1;
        long sub = bucket % SUB;
        return ((SUB + sub + 1) << (exponent - SUB_BITS)) - 1;
    }

    /** Records one latency; on the recording thread. */
    void record(long nanos) {
        buckets[bucket(nanos)]++;
        count++;
        sum += nanos;
        if (nanos > max) {
            max = nanos;
        }
        if (nanos < min) {
            min = nanos;
        }
    }

    /** What was recorded until now; any thread. */
    ConnectionStatistics.Latency summary() {
        long[] copy = new long[BUCKETS];
        long n = 0;
        for (int i = 0; i < BUCKETS; i++) {
            copy[i] = (long) LONGS.getOpaque(buckets, i);
            n += copy[i];
        }
        if (n == 0) {
            return ConnectionStatistics.Latency.NONE;
        }
        long total = (long) SUM.getOpaque(this), samples = (long) COUNT.getOpaque(this);
        long lowest = (long) MIN.getOpaque(this), highest = (long) MAX.getOpaque(this);
        // A bucket's highest value may pass the largest seen; the exact extremes bound the estimates.
        return new ConnectionStatistics.Latency(n, lowest,
                Math.clamp(percentile(copy, n, 0.50), lowest, highest),
                Math.clamp(percentile(copy, n, 0.99), lowest, highest), highest,
                samples == 0 ? 0 : total / samples);
    }

    /** The highest value of the bucket the {@code p}-th fraction of the {@code n} counts reaches. */
    private static long percentile(long[] counts, long n, double p) {
        long rank = Math.max(1, (long) Math.ceil(p * n)), seen = 0;
        for (int i = 0; i < counts.length; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return highest(i);
            }
        }
        return highest(counts.length - 1);
    }
}
