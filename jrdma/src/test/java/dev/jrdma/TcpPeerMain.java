package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Both ends of {@link TcpAcrossNamespacesTest}, each run in its own network namespace
 * (plain Java: the child JVMs have no JUnit). {@code server IP}: exposes a 1 MiB region in the
 * private data, echoes messages, prints "ready PORT", ends when its peer disconnects.
 * {@code client IP PORT}: echoes, writes 1 MiB and reads it back, runs atomics, checking each
 * result; prints "ok" and exits 0, or exits 1 saying what differed.
 */
public final class TcpPeerMain {
    private TcpPeerMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("server")) {
            serve(args[1]);
        } else {
            System.exit(client(new InetSocketAddress(args[1], Integer.parseInt(args[2]))) ? 0 : 1);
        }
    }

    private static void serve(String ip) throws Exception {
        // A long handshake time-out: the client is a cold JVM on the VM's emulated CPU, which once
        // took longer than the default 5 s from its TCP connect to its READY_TO_USE, and the server
        // then dropped the connection the client had just seen established (CI, November 2026).
        try (Rdma rdma = Rdma.builder().provider("tcp").handshakeTimeout(java.time.Duration.ofSeconds(60)).build();
             LocalRegion region = rdma.allocate(1 << 20)) {
            CompletableFuture<Connection> gone = new CompletableFuture<>();
            int[] echoed = {0};
            ConnectionConfig config = ConnectionConfig.builder().privateData(region.toRemote().toDescriptor()).build();
            try (RdmaServer s = rdma.listen(new InetSocketAddress(ip, 0), config, c -> {
                c.onDisconnect(gone::complete);
                c.onReceive((conn, m) -> {
                    echoed[0]++;
                    LocalRegion echo = rdma.allocate(Math.max(1, m.byteCount()));
                    MemorySegment.copy(m.data(), 0, echo.segment(), 0, m.byteCount());
                    conn.sendWithImm(m.byteCount(), echo.slice(0, m.byteCount())).whenComplete((v, e) -> echo.close());
                });
            })) {
                System.out.println("ready " + s.address().getPort());
                System.out.flush();
                Connection c = gone.get(120, TimeUnit.SECONDS);
                // Said for the test's report: why this side saw the connection end, after how many echoes.
                System.out.println("gone after " + echoed[0] + " echoes: " + c.state() + ", " + c.failure());
            }
        }
    }

    private static boolean client(InetSocketAddress server) throws Exception {
        // As the server's handshake time-out: a cold JVM's first connect on the VM's emulated CPU
        // took longer than the default 10 s (CI, November 2026).
        try (Rdma rdma = Rdma.builder().provider("tcp").build();
             Connection c = rdma.connect(server, ConnectionConfig.builder().timeout(java.time.Duration.ofSeconds(60)).build())) {
            RemoteRegion region = RemoteRegion.fromDescriptor(c.peerPrivateData());
            LocalRegion msg = rdma.allocate(3000);
            for (int i = 0; i < 200; i++) {
                msg.segment().fill((byte) i);
                CompletableFuture<Message> reply = c.receive();
                try {
                    c.sendSync(msg);
                } catch (RdmaException e) {
                    throw new RdmaException("echo " + i + " of 200", e);
                }
                try (Message m = reply.get(30, TimeUnit.SECONDS)) {
                    if (m.byteCount() != 3000 || m.imm().orElse(-1) != 3000 || m.data().mismatch(msg.segment()) != -1) {
                        System.out.println("echo " + i + " differs");
                        return false;
                    }
                }
            }
            byte[] data = new byte[1 << 20];
            new Random(11).nextBytes(data);
            LocalRegion out = rdma.allocate(data.length), back = rdma.allocate(data.length);
            out.segment().copyFrom(MemorySegment.ofArray(data));
            c.writeSync(out, region);
            c.readSync(region, back);
            if (back.segment().mismatch(out.segment()) != -1) {
                System.out.println("1 MiB read back differs from what was written");
                return false;
            }
            RemoteRegion word = region.slice(0, 8);
            c.atomicWriteSync(word, 0);
            for (int i = 0; i < 50; i++) {
                c.fetchAndAddSync(word, 3);
            }
            long prior = c.compareAndSwapSync(word, 150, 7);
            LocalRegion w = rdma.allocate(8);
            c.readSync(word, w);
            if (prior != 150 || w.segment().get(ValueLayout.JAVA_LONG, 0) != 7) {
                System.out.println("atomics: prior " + prior + ", then " + w.segment().get(ValueLayout.JAVA_LONG, 0));
                return false;
            }
            System.out.println("ok " + c.remoteAddress() + " from " + c.queuePair());
            return true;
        }
    }
}
