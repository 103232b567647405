package dev.jrdma.provider.tcp;

import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;

/**
 * The victim of {@link HostilePeerTest}, in a JVM of its own so that its resident memory can be
 * measured apart from the attacker's (the test runs it with a fixed, pre-touched heap: what its
 * RSS gains is native memory). {@code PROVIDER RECEIVE_DEPTH}: listens on loopback with that
 * receive depth (and optionally a handshake time-out in ms and the most pending handshakes), exposes a 16 MiB region (all access) in its private data, never takes a message
 * (so receives run out), prints "ready PORT", and ends when its standard input closes.
 */
public final class HostileTargetMain {
    static final int EXPOSED = 16 << 20;

    private HostileTargetMain() {
    }

    /**
     * Loads the library's classes now: with its fds used up (a case of the test) this JVM cannot
     * open a class file, and in a test the library is a directory of them, not an open jar.
     */
    private static void loadEveryLibraryClass() throws Exception {
        Path classes = Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class") && !p.endsWith("module-info.class")).toList()) {
                String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
                Class.forName(name, false, HostileTargetMain.class.getClassLoader());
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String provider = args[0];
        loadEveryLibraryClass();
        int depth = Integer.parseInt(args[1]);
        Rdma.Builder builder = Rdma.builder().provider(provider);
        if (args.length > 2) {   // HANDSHAKE_TIMEOUT_MS MAX_PENDING_HANDSHAKES
            builder.handshakeTimeout(Duration.ofMillis(Long.parseLong(args[2]))).maxPendingHandshakes(Integer.parseInt(args[3]));
        }
        // -Djrdma.test.exposed=BYTES exposes that much instead, every page touched first (so the
        // region itself is in the RSS before a test measures what an attack adds).
        long exposed = Long.getLong("jrdma.test.exposed", EXPOSED);
        try (Rdma rdma = builder.build(); LocalRegion region = rdma.allocate(exposed)) {
            if (exposed != EXPOSED) {
                region.segment().fill((byte) 0x5A);
            }
            ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(depth).receiveBufferSize(4096)
                    .privateData(region.toRemote().toDescriptor()).build();
            try (RdmaServer s = rdma.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, c -> { })) {
                System.out.println("ready " + s.address().getPort());
                System.out.flush();
                // Stays up until the test closes our standard input (or dies: then so does the pipe).
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            }
        }
    }
}
