package dev.jrdma.bench;

import dev.jrdma.CompletionMode;
import dev.jrdma.Completion;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.LongCompletionHandler;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

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
 * The cost of one operation through the public API, from the call to its completion handler,
 * on one connection over loopback: posting (checks, a slot, the provider's work request), the
 * provider's data path, and completion dispatch. The caller's thread is the IO thread (INLINE,
 * POLLING), so nothing but the operation is measured; the server is another {@link Rdma} in
 * this JVM with its own IO thread.
 *
 * <p>On shm an 8-byte write, read or atomic is done by the initiator on its mapping of the
 * target's memory, so the numbers are jrdma's own overhead plus one small copy: the figure
 * that matters for the zero-allocation claim is {@code gc.alloc.rate.norm} under
 * {@code -prof gc}, which must be 0 B/op on the {@code *Handler} benchmarks. On tcp each
 * operation is a round trip through the server's IO thread over the loopback socket.
 *
 * <p>{@code pollIdle} is what a spinning IO thread spends per look when nothing is there.
 *
 * <p>On verbs ({@code -p provider=verbs}) the server listens on {@code -Djrdma.bench.serverIp}
 * (default loopback) with device {@code -Djrdma.bench.serverDevice}, and the client uses
 * {@code -Djrdma.bench.clientDevice}: in the Soft-RoCE VM, rxe0 at 10.77.0.1 and rxe1.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class OperationPathBenchmark {
    @Param({"shm", "tcp", "noop"})
    public String provider;

    /** The client single-threaded (Rdma.Builder.singleThreaded): no lock, no atomic step on the operation path. */
    @Param({"false", "true"})
    public boolean single;

    private Rdma server, client;
    private RdmaServer listener;
    private LocalRegion target, out, in;
    private Connection connection;
    private RemoteRegion peer, peerWord;
    private final Counter<Void> done = new Counter<>();
    private final Counter<Long> fetched = new Counter<>();
    private final PrimitiveCounter primitive = new PrimitiveCounter();

    /** Counts completions with the value unboxed. */
    static final class PrimitiveCounter implements LongCompletionHandler<Object> {
        long completed;
        long last;

        @Override
        public void completed(long value, Object a) {
            completed++;
            last = value;
        }

        @Override
        public void failed(Throwable e, Object a) {
            throw new IllegalStateException("an operation failed: " + e.getMessage(), e);
        }
    }

    /** Counts completions; an operation that fails stops the benchmark. */
    static final class Counter<V> implements CompletionHandler<V, Object> {
        long completed;

        @Override
        public void completed(V v, Object a) {
            completed++;
        }

        @Override
        public void failed(Throwable e, Object a) {
            throw new IllegalStateException("an operation failed: " + e.getMessage(), e);
        }
    }

    @Setup(Level.Trial)
    public void open() throws java.io.IOException {
        if (provider.equals("noop")) {
            // No transport: the library's own cost. The "peer" region is one of ours, never touched.
            client = Rdma.builder().provider("noop").ioThreads(Rdma.INLINE).singleThreaded(single).build();
            out = client.allocate(8);
            in = client.allocate(8);
            target = client.allocate(64);
            connection = client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 1));
            peer = target.toRemote();
            peerWord = peer.slice(0, 8);
            return;
        }
        server = builder(System.getProperty("jrdma.bench.serverDevice")).build();
        target = server.allocate(64);
        AtomicReference<Connection> accepted = new AtomicReference<>();
        ConnectionConfig config = ConnectionConfig.builder().privateData(target.toRemote().toDescriptor()).build();
        String ip = System.getProperty("jrdma.bench.serverIp");
        InetAddress at = ip == null || ip.isEmpty() ? InetAddress.getLoopbackAddress() : InetAddress.getByName(ip);
        listener = server.listen(new InetSocketAddress(at, 0), config, accepted::set);
        client = builder(System.getProperty("jrdma.bench.clientDevice"))
                .completionMode(CompletionMode.POLLING).ioThreads(Rdma.INLINE).singleThreaded(single).build();
        out = client.allocate(8);
        in = client.allocate(8);
        connection = client.connect(listener.address());
        peer = RemoteRegion.fromDescriptor(connection.peerPrivateData());
        peerWord = peer.slice(0, 8);
        // The first operation on shm maps the region (through the socket); do it before measuring.
        connection.writeSync(out, peerWord);
        connection.readSync(peerWord, in);
    }

    private Rdma.Builder builder(String device) {
        Rdma.Builder b = Rdma.builder().provider(provider);
        if (device != null && !device.isEmpty()) {
            b.device(device);
        }
        return b;
    }

    @TearDown(Level.Trial)
    public void close() {
        connection.close();
        client.close();
        if (server != null) {
            listener.close();
            server.close();
        }
    }

    private long awaitOne(Counter<?> c, long before) {
        while (c.completed == before) {
            client.poll();
        }
        return c.completed;
    }

    @Benchmark
    public long write8Handler() {
        long before = done.completed;
        connection.write(out, peerWord, null, done);
        return awaitOne(done, before);
    }

    @Benchmark
    public long read8Handler() {
        long before = done.completed;
        connection.read(peerWord, in, null, done);
        return awaitOne(done, before);
    }

    /**
     * The done-during-the-call form (UCX's UCS_OK rule): where the provider carries the write out
     * in the call (shm's mapped peer, noop, on a single-threaded client) nothing follows; otherwise
     * its handler does, and the poll here waits for it.
     */
    @Benchmark
    public long write8OrPost() {
        long before = done.completed;
        if (connection.writeOrPost(out, peerWord, null, done)) {
            return before;
        }
        return awaitOne(done, before);
    }

    @Benchmark
    public long read8OrPost() {
        long before = done.completed;
        if (connection.readOrPost(peerWord, in, null, done)) {
            return before;
        }
        return awaitOne(done, before);
    }

    @Benchmark
    public long fetchAddHandler() {
        long before = fetched.completed;
        connection.fetchAndAdd(peerWord, 1, null, fetched);
        return awaitOne(fetched, before);
    }

    /** The prior value through a {@link LongCompletionHandler}: no boxing. */
    @Benchmark
    public long fetchAddPrimitive() {
        long before = primitive.completed;
        connection.fetchAndAdd(peerWord, 1, null, primitive);
        while (primitive.completed == before) {
            client.poll();
        }
        return primitive.completed;
    }

    /**
     * An ON_ERROR write: no completion of its own; one in a run is signaled (unseen) to reclaim
     * the send queue, and the poll here takes those.
     */
    @Benchmark
    public int write8OnError() {
        connection.write(out, peerWord, null, null, Completion.ON_ERROR);
        return client.poll();
    }

    @Benchmark
    public Object write8Future() {
        CompletableFuture<Void> f = connection.write(out, peerWord);
        while (!f.isDone()) {
            client.poll();
        }
        return f.join();
    }

    @Benchmark
    public void write8Sync() {
        connection.writeSync(out, peerWord);
    }

    @Benchmark
    public int pollIdle() {
        return client.poll();
    }
}
