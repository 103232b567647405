package dev.jrdma.bench;

import dev.jrdma.Access;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What a buffer of registered memory costs: lent by the pool and given back
 * ({@code rdma.allocate(n).close()}, zeroed, and {@code allocateUninitialized}) against
 * registering and deregistering the same bytes ({@code rdma.register(segment, ...).close()},
 * an {@code ibv_reg_mr} and {@code ibv_dereg_mr} on verbs), each through the public API.
 * The provider and device come from {@code -Djrdma.bench.provider} / {@code -Djrdma.bench.device}
 * (default: auto, its first device).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PoolVsRegisterBenchmark {
    @Param({"64", "4096", "65536", "1048576"})
    public int size;

    private Rdma rdma;
    private Arena arena;
    private MemorySegment own;

    @Setup(Level.Trial)
    public void open() {
        Rdma.Builder b = Rdma.builder().provider(System.getProperty("jrdma.bench.provider", "auto"));
        String device = System.getProperty("jrdma.bench.device");
        if (device != null && !device.isEmpty()) {
            b.device(device);
        }
        rdma = b.build();
        arena = Arena.ofShared();
        own = arena.allocate(size, 4096);
    }

    @TearDown(Level.Trial)
    public void close() {
        rdma.close();
        arena.close();
    }

    @Benchmark
    public long poolAllocateAndClose() {
        LocalRegion r = rdma.allocate(size);
        long a = r.address();
        r.close();
        return a;
    }

    @Benchmark
    public long poolAllocateUninitializedAndClose() {
        LocalRegion r = rdma.allocateUninitialized(size);
        long a = r.address();
        r.close();
        return a;
    }

    @Benchmark
    public int registerAndDeregister() {
        LocalRegion r = rdma.register(own, Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE);
        int k = r.lkey();
        r.close();
        return k;
    }
}
