package dev.jrdma.bench;

import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * Bytes allocated per operation by the benchmark's own threads (JMH's {@code jmh-worker}s) only.
 * JMH's GC profiler ({@code gc.alloc.rate.norm}) counts every thread of the JVM, so a benchmark
 * whose peer lives in the same JVM (the tcp server's IO thread) is charged with the peer's
 * allocations too; this one says what the calling thread allocates, which is what a
 * zero-allocation claim about the call path is about. Read through
 * {@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes}, around each iteration.
 */
public final class WorkerAllocationProfiler implements InternalProfiler {
    static final String RESULT = "worker.alloc.norm";
    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private Map<Long, Long> before = Map.of();

    @Override
    public String getDescription() {
        return "bytes allocated per operation by the benchmark threads (jmh-worker) alone";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
        before = workers();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmark, IterationParams iteration,
                                                       IterationResult result) {
        long bytes = 0;
        for (Map.Entry<Long, Long> w : workers().entrySet()) {
            bytes += w.getValue() - before.getOrDefault(w.getKey(), 0L);   // a worker new since: all of its bytes
        }
        long ops = result.getMetadata().getAllOps();
        return List.of(new ScalarResult(RESULT, ops == 0 ? Double.NaN : (double) bytes / ops, "B/op", AggregationPolicy.AVG));
    }

    /** Thread id to bytes allocated so far, for JMH's worker threads (names only: no stack walk). */
    private Map<Long, Long> workers() {
        Map<Long, Long> m = new HashMap<>();
        for (java.lang.management.ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (t != null && t.getThreadName().contains("jmh-worker")) {
                long b = threads.getThreadAllocatedBytes(t.getThreadId());
                if (b >= 0) {
                    m.put(t.getThreadId(), b);
                }
            }
        }
        return m;
    }
}
