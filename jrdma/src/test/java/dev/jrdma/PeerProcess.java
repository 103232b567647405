package dev.jrdma;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A {@link FaultPeerMain} server in a child JVM, for the tests that stop, kill and restart their
 * peer: the process, the region it exposes (from the descriptor it prints) and where it listens.
 * Its output is read on a thread of its own, so the pipe never fills.
 */
record PeerProcess(Process process, RemoteRegion region, InetSocketAddress address) implements AutoCloseable {

    /** Starts the peer on {@code t}'s server device, listening at {@code at}; returns once it is ready. */
    static PeerProcess start(Transport t, InetSocketAddress at, int receives) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                VerbsTestAddresses.childClassPath(), FaultPeerMain.class.getName(), t.serverDevice(),
                at.getAddress().getHostAddress(), String.valueOf(at.getPort()), String.valueOf(receives), t.provider())
                .redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> descriptor = CompletableFuture.supplyAsync(() -> {
            StringBuilder seen = new StringBuilder();
            String d = null;
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    if (line.startsWith("descriptor ")) {
                        d = line.substring("descriptor ".length());
                    } else if (line.equals("ready") && d != null) {
                        String found = d;
                        Thread.ofVirtual().start(() -> drain(out));   // keep the pipe from filling
                        return found;
                    } else {
                        seen.append(line).append('\n');
                    }
                }
            } catch (java.io.IOException e) {
                seen.append(e);
            }
            throw new IllegalStateException("the peer process ended before it was ready:\n" + seen);
        });
        try {
            String hex = descriptor.get(120, TimeUnit.SECONDS);
            return new PeerProcess(p, RemoteRegion.fromDescriptor(HexFormat.of().parseHex(hex)), at);
        } catch (Exception e) {
            p.destroyForcibly();
            p.waitFor(60, TimeUnit.SECONDS);
            throw e;
        }
    }

    private static void drain(BufferedReader out) {
        try {
            while (out.readLine() != null) {
                // the peer's later output (JUL lines) is not looked at
            }
        } catch (java.io.IOException e) {
            // the peer is gone
        }
    }

    void signal(String name) throws Exception {
        Shell.run("kill", "-" + name, String.valueOf(process.pid()));
    }

    /** SIGKILL, and waits until the process is gone. */
    void kill() throws Exception {
        process.destroyForcibly();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the peer process " + process.pid() + " outlived SIGKILL by 60 s");
        }
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            signal("CONT");
            process.destroyForcibly();
        }
        process.waitFor(60, TimeUnit.SECONDS);
    }
}
