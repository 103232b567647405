package dev.jrdma;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a connection has done, counted since its queue pair connected: operations and bytes by
 * kind, failures, errors by completion status, what is outstanding now, and a summary of sampled
 * completion latencies. A snapshot, taken by {@link Connection#statistics()} from any thread
 * without stopping the connection, so its counts may be a moment behind each other; a connection
 * that reconnects (a {@link ReconnectPolicy}) starts counting again with each new queue pair.
 *
 * <p>Counting costs the data path a few plain increments per operation: no lock, no atomic
 * instruction, no allocation. Latency is sampled, one operation in {@link #LATENCY_SAMPLE_EVERY}.
 */
public final class ConnectionStatistics {
    /** One send-queue operation in this many has its completion latency measured. */
    public static final int LATENCY_SAMPLE_EVERY = 64;

    private static final OperationType[] TYPES = OperationType.values();

    private final long[] completed;
    private final long[] failed;
    private final long[] bytes;
    private final Map<String, Long> errors;
    private final long outstanding;
    private final Latency latency;

    ConnectionStatistics(long[] completed, long[] failed, long[] bytes, Map<String, Long> errors, long outstanding,
                         Latency latency) {
        this.completed = completed;
        this.failed = failed;
        this.bytes = bytes;
        this.errors = Collections.unmodifiableMap(new TreeMap<>(errors));
        this.outstanding = outstanding;
        this.latency = latency;
    }

    /**
     * {@return operations of {@code type} that completed successfully}
     *
     * @param type the kind of operation
     */
    public long completed(OperationType type) {
        return completed[type.ordinal()];
    }

    /**
     * {@return operations of {@code type} that completed with an error, or failed when the connection closed}
     *
     * @param type the kind of operation
     */
    public long failed(OperationType type) {
        return failed[type.ordinal()];
    }

    /**
     * {@return bytes moved by the successful operations of {@code type}}: a transfer's or
     * message's length, 8 for an atomic, 0 for a flush; for {@link OperationType#RECEIVE}, the
     * bytes of the messages received.
     *
     * @param type the kind of operation
     */
    public long bytes(OperationType type) {
        return bytes[type.ordinal()];
    }

    /** {@return operations of every kind that completed successfully, receives included} */
    public long completed() {
        return sum(completed);
    }

    /** {@return operations of every kind that failed} */
    public long failed() {
        return sum(failed);
    }

    /** {@return send-queue operations posted and not yet completed when the snapshot was taken} */
    public long outstanding() {
        return outstanding;
    }

    /**
     * {@return failed completions by the status the provider reported, e.g.
     * {@code IBV_WC_REM_ACCESS_ERR} → 1}; {@code IBV_WC_WR_FLUSH_ERR} counts those the queue pair
     * flushed after it went to error. Sorted by name, unmodifiable.
     */
    public Map<String, Long> errorsByStatus() {
        return errors;
    }

    /**
     * {@return operations that failed because the peer did not answer within the transport's retry
     * budget (IBV_WC_RETRY_EXC_ERR)} The retries before the budget ran out are the device's to
     * count: verbs reports no per-connection retry count, only the device-wide counters
     * ({@code /sys/class/infiniband/DEVICE/ports/N/hw_counters}).
     */
    public long retryExceeded() {
        return errors.getOrDefault("IBV_WC_RETRY_EXC_ERR", 0L);
    }

    /** {@return sends that failed because the peer had no receive posted within the RNR retry budget (IBV_WC_RNR_RETRY_EXC_ERR)} */
    public long rnrRetryExceeded() {
        return errors.getOrDefault("IBV_WC_RNR_RETRY_EXC_ERR", 0L);
    }

    /** {@return the sampled completion latencies: from posting an operation to its completion reaching the connection} */
    public Latency latency() {
        return latency;
    }

    /** {@return completed operations by kind, the kinds with none left out} */
    public Map<OperationType, Long> completedByType() {
        Map<OperationType, Long> m = new EnumMap<>(OperationType.class);
        for (OperationType t : TYPES) {
            if (completed[t.ordinal()] != 0) {
                m.put(t, completed[t.ordinal()]);
            }
        }
        return m;
    }

    private static long sum(long[] a) {
        long s = 0;
        for (long v : a) {
            s += v;
        }
        return s;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("completed ").append(completedByType());
        b.append(", failed ").append(failed()).append(", outstanding ").append(outstanding);
        if (!errors.isEmpty()) {
            b.append(", errors ").append(errors);
        }
        return b.append(", latency ").append(latency).toString();
    }

    /**
     * A summary of sampled completion latencies, in nanoseconds. The percentiles are a bucket's
     * upper bound (buckets 12.5 % wide); minimum, maximum and mean are exact over the samples.
     *
     * @param samples    operations measured
     * @param minNanos   the shortest
     * @param p50Nanos   the median
     * @param p99Nanos   the 99th percentile
     * @param maxNanos   the longest
     * @param meanNanos  the mean
     */
    public record Latency(long samples, long minNanos, long p50Nanos, long p99Nanos, long maxNanos, long meanNanos) {
        /** No operation measured yet. */
        public static final Latency NONE = new Latency(0, 0, 0, 0, 0, 0);

        @Override
        public String toString() {
            return samples == 0 ? "no samples" : String.format("%d samples, min %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us",
                    samples, minNanos / 1e3, p50Nanos / 1e3, p99Nanos / 1e3, maxNanos / 1e3);
        }
    }
}
