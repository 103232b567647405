package dev.jrdma.bench;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.SharedReceiveQueue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The library's own cost of receiving a message: a send on the noop provider lands in one of
 * the connection's posted receives, as if the peer were itself, and the {@code onReceive}
 * callback gets the message and closes it, which posts the buffer again. {@code receives}: the
 * connection's own receive queue, or a {@link SharedReceiveQueue} (whose pool takes a lock to
 * lend and take back a buffer). The send's own completion path is in both, as in
 * {@link OperationPathBenchmark#write8Handler}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ReceivePathBenchmark {
    @Param({"own", "shared"})
    public String receives;

    private Rdma rdma;
    private Connection connection;
    private LocalRegion out;
    private long received;
    private final OperationPathBenchmark.Counter<Void> sent = new OperationPathBenchmark.Counter<>();

    @Setup(Level.Trial)
    public void open() {
        rdma = Rdma.builder().provider("noop").ioThreads(Rdma.INLINE).build();
        ConnectionConfig.Builder config = ConnectionConfig.builder().receiveQueueDepth(64).receiveBufferSize(256);
        if (receives.equals("shared")) {
            SharedReceiveQueue srq = rdma.sharedReceiveQueue(64, 256);
            config.sharedReceiveQueue(srq);
        }
        out = rdma.allocate(8);
        connection = rdma.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 1), config.build());
        BiConsumer<Connection, Message> count = (c, m) -> received++;   // the message is closed when it returns
        connection.onReceive(count);
    }

    @Benchmark
    public long sendReceive8() {
        long before = received;
        connection.send(out, null, sent);
        while (received == before) {
            rdma.poll();
        }
        return received;
    }

    @TearDown(Level.Trial)
    public void close() {
        connection.close();
        rdma.close();
    }
}
