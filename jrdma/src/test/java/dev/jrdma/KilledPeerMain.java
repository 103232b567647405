package dev.jrdma;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The peer that {@link RdmaServingConformance} kills: connects to {@code ip:port} over
 * {@code provider} from {@code device}, sends the descriptor of a region it exposes, prints "ready", then writes to
 * the server's region until it is killed (at most 120 s, then it exits by itself).
 */
public final class KilledPeerMain {
    private KilledPeerMain() {
    }

    public static void main(String[] args) throws Exception {
        String provider = args[0];
        String device = args[1];
        InetSocketAddress server = new InetSocketAddress(args[2], Integer.parseInt(args[3]));
        try (Rdma rdma = Rdma.builder().provider(provider).device(device).build()) {
            Connection c = rdma.connect(server, ConnectionConfig.builder().timeout(java.time.Duration.ofSeconds(20)).build());
            LocalRegion exposed = rdma.allocate(4096);
            LocalRegion msg = rdma.allocate(RemoteRegion.DESCRIPTOR_BYTES);
            msg.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(exposed.toRemote().toDescriptor()));
            c.sendSync(msg);
            try (Message m = c.receive().get(30, TimeUnit.SECONDS)) {
                RemoteRegion target = RemoteRegion.fromDescriptor(m.data().toArray(ValueLayout.JAVA_BYTE));
                System.out.println("ready");
                System.out.flush();
                LocalRegion buf = rdma.allocate(64);
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (System.nanoTime() < end) {
                    c.writeSync(buf, target.slice(0, 64));
                    Thread.sleep(5);
                }
            }
        }
    }
}
