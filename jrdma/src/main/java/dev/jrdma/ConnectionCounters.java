package dev.jrdma;

import dev.jrdma.spi.WorkCompletion;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.HashMap;
import java.util.Map;

/**
 * A connection's counts, kept as plain longs by the threads that already own the paths they count
 * (no lock, no atomic instruction): the completing thread counts what completes, the posters
 * (under the post lock, or the owner of a single-threaded connection) what a provider carried
 * out, or refused, during the post call. {@link #snapshot} reads them from any thread with opaque
 * loads: every count whole, perhaps a moment behind.
 */
final class ConnectionCounters {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final int TYPES = OperationType.values().length;
    private static final int SAMPLE_MASK = ConnectionStatistics.LATENCY_SAMPLE_EVERY - 1;
    private static final int RECEIVE = OperationType.RECEIVE.ordinal();
    /** Statuses above {@link WorkCompletion#MAX_STATUS} count in the last entry. */
    private static final int STATUSES = WorkCompletion.MAX_STATUS + 2;

    // The completing thread's. Operations and bytes of a kind side by side ([2t], [2t + 1]): one
    // cache line for both increments.
    private final long[] done = new long[2 * TYPES];
    private final long[] failed = new long[TYPES];
    private final long[] statuses = new long[STATUSES];
    private final LatencyHistogram latency = new LatencyHistogram();

    // The posters'.
    private final long[] doneAtPost = new long[2 * TYPES];
    private final long[] failedAtPost = new long[TYPES];

    /** Whether the post numbered {@code tick} (a poster's count) has its latency measured: one in LATENCY_SAMPLE_EVERY. */
    static boolean sampled(int tick) {
        return (tick & SAMPLE_MASK) == 0;
    }

    /** {@code op} completed successfully, moving {@code length} bytes; the completing thread's. */
    void completed(Operation op, long length) {
        int i = 2 * op.typeIndex;
        done[i]++;
        done[i + 1] += length;
    }

    /** A sampled operation took {@code nanos} from its post to its completion; the completing thread's. */
    void latency(long nanos) {
        latency.record(nanos);
    }

    /** {@code op} failed with completion {@code status}, or (-1) without one, failed by a close; the completing thread's. */
    void failed(Operation op, int status) {
        failed[op.typeIndex]++;
        if (status >= 0) {
            statuses[Math.min(status, STATUSES - 1)]++;
        }
    }

    /** A message of {@code length} bytes arrived (0 for a write-with-immediate's notice); the completing thread's. */
    void received(int length) {
        done[2 * RECEIVE]++;
        done[2 * RECEIVE + 1] += length;
    }

    /** A receive failed with {@code status} (not a flush: a closing queue pair flushes every receive it has). */
    void receiveFailed(int status) {
        failed[RECEIVE]++;
        statuses[Math.min(status, STATUSES - 1)]++;
    }

    /** The provider carried out {@code op} during the post call (shm's direct path); a poster's. */
    void completedAtPost(Operation op, long length) {
        int i = 2 * op.typeIndex;
        doneAtPost[i]++;
        doneAtPost[i + 1] += length;
    }

    /** {@code op}, a batch member the device did not take, failed during the post call; a poster's. */
    void failedAtPost(Operation op) {
        failedAtPost[op.typeIndex]++;
    }

    /** Operations of every kind completed successfully so far, without a snapshot's copies; any thread. */
    long completedTotal() {
        long n = 0;
        for (int t = 0; t < TYPES; t++) {
            n += read(done, 2 * t) + read(doneAtPost, 2 * t);
        }
        return n;
    }

    /** Operations of every kind failed so far; any thread. */
    long failedTotal() {
        long n = 0;
        for (int t = 0; t < TYPES; t++) {
            n += read(failed, t) + read(failedAtPost, t);
        }
        return n;
    }

    /** The counts now; any thread. {@code outstanding}: the send queue's operations in flight. */
    ConnectionStatistics snapshot(long outstanding) {
        long[] c = new long[TYPES], f = new long[TYPES], b = new long[TYPES];
        for (int t = 0; t < TYPES; t++) {
            c[t] = read(done, 2 * t) + read(doneAtPost, 2 * t);
            f[t] = read(failed, t) + read(failedAtPost, t);
            b[t] = read(done, 2 * t + 1) + read(doneAtPost, 2 * t + 1);
        }
        Map<String, Long> errors = new HashMap<>();
        for (int s = 0; s < STATUSES; s++) {
            long n = read(statuses, s);
            if (n != 0) {
                errors.put(s == STATUSES - 1 ? "other" : WorkCompletion.statusName(s), n);
            }
        }
        return new ConnectionStatistics(c, f, b, errors, Math.max(0, outstanding), latency.summary());
    }

    private static long read(long[] a, int i) {
        return (long) LONGS.getOpaque(a, i);
    }
}
