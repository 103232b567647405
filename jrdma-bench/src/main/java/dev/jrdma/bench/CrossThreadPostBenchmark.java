package dev.jrdma.bench;

import dev.jrdma.Completion;
import dev.jrdma.CompletionMode;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
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
 * A post from a thread that is not the connection's IO thread: the JMH thread posts, the
 * client's own IO thread (one, POLLING: it spins) completes. This is the case issue 46's
 * operation ring is for (its target: 60 ns for such a post on the noop provider), measured here
 * as it is today, under the send queue's post lock, so the ring has a baseline.
 *
 * <p>{@code write8OnError} is the post alone: ON_ERROR writes, one in a run signaled to
 * reclaim the queue, which the IO thread does (the poster waits only when the queue is full).
 * {@code write8HandlerRoundTrip} posts with a handler and spins until the IO thread has run it:
 * the post, the IO thread's pass and the hand back of one cache line each way.
 *
 * <p>On shm the server is another {@link Rdma} in this JVM in EVENT mode (it sleeps: a one-sided
 * write does not need it), so that on a 2-CPU host the two spinning threads are the client's.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CrossThreadPostBenchmark {
    @Param({"noop", "shm"})
    public String provider;

    private Rdma server, client;
    private RdmaServer listener;
    private LocalRegion out;
    private Connection connection;
    private RemoteRegion peerWord;
    private final VolatileCounter done = new VolatileCounter();

    /** Counts completions on the IO thread, for the posting thread to see. */
    static final class VolatileCounter implements CompletionHandler<Void, Object> {
        volatile long completed;

        @Override
        public void completed(Void v, Object a) {
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
            client = Rdma.builder().provider("noop").ioThreads(1).completionMode(CompletionMode.POLLING).build();
            out = client.allocate(8);
            LocalRegion target = client.allocate(64);
            connection = client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 1));
            peerWord = target.toRemote().slice(0, 8);
            return;
        }
        server = Rdma.builder().provider(provider).completionMode(CompletionMode.EVENT).build();
        LocalRegion target = server.allocate(64);
        AtomicReference<Connection> accepted = new AtomicReference<>();
        ConnectionConfig config = ConnectionConfig.builder().privateData(target.toRemote().toDescriptor()).build();
        listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::set);
        client = Rdma.builder().provider(provider).ioThreads(1).completionMode(CompletionMode.POLLING).build();
        out = client.allocate(8);
        connection = client.connect(listener.address());
        peerWord = RemoteRegion.fromDescriptor(connection.peerPrivateData()).slice(0, 8);
        connection.writeSync(out, peerWord);   // shm: the first write maps the region
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

    @Benchmark
    public void write8OnError() {
        connection.write(out, peerWord, null, null, Completion.ON_ERROR);
    }

    @Benchmark
    public long write8HandlerRoundTrip() {
        long before = done.completed;
        connection.write(out, peerWord, null, done);
        long now;
        while ((now = done.completed) == before) {
            Thread.onSpinWait();
        }
        return now;
    }
}
