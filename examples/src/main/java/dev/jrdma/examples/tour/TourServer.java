package dev.jrdma.examples.tour;

import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The other process of the {@link Tour}: on the default provider, it exposes a region (its
 * descriptor goes to every client in the connection's private data) and echoes every message
 * back with its length as immediate data. It prints one line, {@code listening PORT PROVIDER},
 * and runs until its standard input closes (so it ends with the tour, even if the tour
 * is killed).
 */
public final class TourServer {
    /** Size of the exposed region. */
    public static final int REGION = 4 << 20;

    private TourServer() {
    }

    public static void main(String[] args) throws Exception {
        try (Rdma rdma = Rdma.open(); LocalRegion region = rdma.allocate(REGION)) {
            ConnectionConfig config = ConnectionConfig.builder().privateData(region.toRemote().toDescriptor()).build();
            try (RdmaServer server = rdma.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config,
                    c -> c.onReceive((conn, msg) -> {
                        LocalRegion reply = rdma.allocate(Math.max(1, msg.byteCount()));
                        MemorySegment.copy(msg.data(), 0, reply.segment(), 0, msg.byteCount());
                        conn.sendWithImm(msg.byteCount(), reply.slice(0, msg.byteCount()))
                                .whenComplete((v, e) -> reply.close());
                    }))) {
                System.out.println("listening " + server.address().getPort() + " " + rdma.providerName());
                System.out.flush();
                while (System.in.read() >= 0) {
                    // runs until the tour closes our stdin
                }
            }
        }
    }
}
