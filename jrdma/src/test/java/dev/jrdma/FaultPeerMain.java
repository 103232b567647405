package dev.jrdma;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.HexFormat;

/**
 * The peer that {@link PeerStoppedOrKilledVerbsTest} stops and kills and the reconnect tests kill and
 * restart ({@link PeerProcess} starts it): a server in its own process on {@code device} of
 * {@code provider} (verbs unless a fifth argument names another), listening on {@code ip:port} with {@code receiveDepth} receives posted and a
 * 0.64 ms RNR delay. It exposes a 64 KiB region whose byte p is {@code (byte) (p * 13 + 5)}, prints
 * "descriptor HEX" and then "ready", consumes every message it gets, and exits by itself after
 * 300 s at most.
 */
public final class FaultPeerMain {
    static final int REGION = 64 * 1024;

    private FaultPeerMain() {
    }

    static byte expected(long p) {
        return (byte) (p * 13 + 5);
    }

    public static void main(String[] args) throws Exception {
        String device = args[0];
        InetSocketAddress at = new InetSocketAddress(args[1], Integer.parseInt(args[2]));
        int receiveDepth = Integer.parseInt(args[3]);
        ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(receiveDepth).minRnrTimer(12).build();
        String provider = args.length > 4 ? args[4] : "verbs";
        try (Rdma rdma = Rdma.builder().provider(provider).device(device).build()) {
            LocalRegion exposed = rdma.allocate(REGION);
            for (long p = 0; p < REGION; p++) {
                exposed.segment().set(ValueLayout.JAVA_BYTE, p, expected(p));
            }
            rdma.listen(at, config, c -> c.onReceive((conn, m) -> { }));
            System.out.println("descriptor " + HexFormat.of().formatHex(exposed.toRemote().toDescriptor()));
            System.out.println("ready");
            System.out.flush();
            Thread.sleep(300_000);
        }
    }
}
