package dev.jrdma.examples.flush;

import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;

/**
 * The librpma-style server: it exposes a region and hands its descriptor to every client in the
 * connection's private data; then it has nothing to do: clients write, flush and read it
 * one-sided, without its CPU.
 *
 * <pre>
 *   bin/jrdma-example flush-server DEVICE IP PORT [--pmem]
 * </pre>
 *
 * {@code --pmem} declares direct write to persistent memory (do so only for memory that is
 * pmem, reached without a volatile cache on the way); clients then flush with PERSISTENT.
 */
public final class WriteFlushReadServer {
    private WriteFlushReadServer() {
    }

    /** Listens on {@code address}, exposing {@code region} to each client through private data. */
    public static RdmaServer start(Rdma rdma, InetSocketAddress address, LocalRegion region) {
        ConnectionConfig config = ConnectionConfig.builder().privateData(region.toRemote().toDescriptor()).build();
        return rdma.listen(address, config, connection -> { });
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length < 3) {
            System.err.println("usage: flush-server DEVICE IP PORT [--pmem]");
            System.exit(2);
        }
        try (Rdma rdma = Rdma.builder().device(args[0]).build(); LocalRegion region = rdma.allocate(1 << 20)) {
            if (args.length > 3 && args[3].equals("--pmem")) {
                region.declareDirectWriteToPmem();
            }
            try (RdmaServer server = start(rdma, new InetSocketAddress(args[1], Integer.parseInt(args[2])), region)) {
                System.out.println("exposing " + region.length() + " bytes on " + server.address() + ", Ctrl-C to stop");
                new CountDownLatch(1).await();
            }
        }
    }
}
