package dev.jrdma.provider.tcp;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * An honest server whose application is slow to take its messages, for
 * {@link ParkedPayloadBudgetTest}, in a JVM of its own (the process's payload budget is set by
 * system properties). {@code PROVIDER}: listens on loopback with one receive of 4 KiB posted per
 * connection and a 16 MiB region exposed (all access) in its private data, prints "ready PORT",
 * takes no message until a line "take" comes on its standard input, then takes (and closes, so
 * the receive is posted again) every message of every connection; ends when its input closes.
 */
public final class SlowReceiverMain {
    private SlowReceiverMain() {
    }

    public static void main(String[] args) throws Exception {
        List<Connection> accepted = new CopyOnWriteArrayList<>();
        try (Rdma rdma = Rdma.builder().provider(args[0]).build(); LocalRegion region = rdma.allocate(16 << 20)) {
            ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(1).receiveBufferSize(4096)
                    .privateData(region.toRemote().toDescriptor()).build();
            try (RdmaServer s = rdma.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::add)) {
                System.out.println("ready " + s.address().getPort());
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line = in.readLine();
                if ("take".equals(line)) {
                    for (Connection c : accepted) {
                        Thread.ofVirtual().start(() -> take(c));
                    }
                    System.out.println("taking from " + accepted.size());
                    System.out.flush();
                    in.readLine();
                }
            }
        }
    }

    private static void take(Connection c) {
        try {
            while (true) {
                try (Message m = c.receive().get(60, TimeUnit.SECONDS)) {
                    m.byteCount();
                }
            }
        } catch (Exception e) {
            // the connection ended (the test closed it), or nothing came for a minute
        }
    }
}
