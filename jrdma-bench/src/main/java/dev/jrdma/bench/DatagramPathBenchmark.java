package dev.jrdma.bench;

import dev.jrdma.DatagramAddress;
import dev.jrdma.DatagramEndpoint;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.nio.channels.DatagramChannel;
import java.util.concurrent.TimeUnit;

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
 * One 64-byte datagram from one endpoint to another over the loopback, sent and received on one
 * thread: {@code jrdma} is two {@link DatagramEndpoint}s of one tcp {@code Rdma} driven inline
 * (the send's completion and the receive's callback, which closes the datagram and so posts its
 * buffer again); {@code nio} is the same through two non-blocking {@link DatagramChannel}s, the
 * UDP syscalls alone. The difference is what the library adds to a datagram; {@code -prof gc}
 * shows what it allocates (a future per send, a {@code Datagram} and its payload slice per receive).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class DatagramPathBenchmark {
    /** jrdma: send's future form; jrdma-handler: its CompletionHandler form (nothing per send); nio. */
    @Param({"jrdma", "jrdma-handler", "nio"})
    public String path;

    /** The handler form's one handler: counts, allocates nothing. */
    private final CompletionHandler<Void, Object> sent = new CompletionHandler<>() {
        @Override
        public void completed(Void v, Object a) {
        }

        @Override
        public void failed(Throwable e, Object a) {
            throw new IllegalStateException(e);
        }
    };
    private boolean handler;

    private Rdma rdma;
    private DatagramEndpoint to;
    private DatagramAddress peer;
    private LocalRegion out;
    private long received;
    private DatagramChannel a, b;
    private ByteBuffer sendBuf, recvBuf;
    private InetSocketAddress bAddress;

    @Setup(Level.Trial)
    public void open() throws Exception {
        InetSocketAddress any = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        handler = path.equals("jrdma-handler");
        if (path.startsWith("jrdma")) {
            rdma = Rdma.builder().provider("tcp").ioThreads(Rdma.INLINE).build();
            DatagramEndpoint from = rdma.datagramEndpoint(any, 64);
            to = rdma.datagramEndpoint(any, 64);
            to.onReceive(d -> {
                received++;
                d.close();
            });
            peer = from.resolveSync(to.localAddress());   // INLINE: a blocking call drives the loop
            to = from;   // the benchmark sends from here
            out = rdma.allocate(64);
        } else {
            a = DatagramChannel.open().bind(any);
            b = DatagramChannel.open().bind(any);
            a.configureBlocking(false);
            b.configureBlocking(false);
            bAddress = (InetSocketAddress) b.getLocalAddress();
            sendBuf = ByteBuffer.allocateDirect(64);
            recvBuf = ByteBuffer.allocateDirect(64);
        }
    }

    @Benchmark
    public long datagram64() throws Exception {
        if (rdma != null) {
            long before = received;
            if (handler) {
                to.send(peer, out, 0, 64, null, sent);
            } else {
                to.send(peer, out);
            }
            while (received == before) {
                rdma.poll();
            }
            return received;
        }
        sendBuf.clear();
        a.send(sendBuf, bAddress);
        recvBuf.clear();
        while (b.receive(recvBuf) == null) {
            Thread.onSpinWait();
        }
        return ++received;
    }

    @TearDown(Level.Trial)
    public void close() throws Exception {
        if (rdma != null) {
            rdma.close();
        } else {
            a.close();
            b.close();
        }
    }
}
