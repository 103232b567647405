package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * tcp between two network stacks, not over loopback: a server and a client JVM in two network
 * namespaces this test makes, joined by a veth pair (MTU 1500, real segmentation), as two hosts
 * would be. Needs root (network namespaces and veth), as CI is: there it runs with the unit tests
 * on the host (it ran in the Soft-RoCE VM before, where its two child JVMs took two minutes to
 * start on the emulated CPU); elsewhere it is skipped, saying why.
 */
class TcpAcrossNamespacesTest {
    private static final String A = "jrdma-ns-a", B = "jrdma-ns-b";

    private static void must(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), String.join(" ", cmd) + " ended");
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
    }

    private static void quietly(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        p.waitFor(30, TimeUnit.SECONDS);
    }

    @Test
    void echoWriteReadAndAtomicsBetweenTwoNetworkNamespaces() throws Exception {
        boolean root = "root".equals(System.getProperty("user.name"));
        if (!root && "true".equals(System.getenv("CI"))) {
            org.junit.jupiter.api.Assertions.fail("CI runs the tests as root: this one makes network namespaces");
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(root, "needs root to make network namespaces (CI runs it as root)");
        quietly("ip", "netns", "del", A);
        quietly("ip", "netns", "del", B);
        try {
            must("ip", "netns", "add", A);
            must("ip", "netns", "add", B);
            must("ip", "link", "add", "jrdma-va", "type", "veth", "peer", "name", "jrdma-vb");
            must("ip", "link", "set", "jrdma-va", "netns", A);
            must("ip", "link", "set", "jrdma-vb", "netns", B);
            must("ip", "-n", A, "addr", "add", "10.99.0.1/24", "dev", "jrdma-va");
            must("ip", "-n", B, "addr", "add", "10.99.0.2/24", "dev", "jrdma-vb");
            for (String[] ns : new String[][] {{A, "jrdma-va"}, {B, "jrdma-vb"}}) {
                must("ip", "-n", ns[0], "link", "set", ns[1], "up");
                must("ip", "-n", ns[0], "link", "set", "lo", "up");
            }
            String java = ProcessHandle.current().info().command().orElseThrow();
            String cp = VerbsTestAddresses.childClassPath();
            Process server = new ProcessBuilder("ip", "netns", "exec", A, java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    cp, TcpPeerMain.class.getName(), "server", "10.99.0.1").redirectErrorStream(true).start();
            try {
                BufferedReader r = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = r.readLine()) != null && !line.startsWith("ready ")) {
                    System.out.println("server: " + line);
                }
                assertTrue(line != null, "the server in " + A + " started");
                String port = line.substring(6).trim();
                // The server's later lines (why it saw the connection end) are kept for the report.
                StringBuffer serverSaid = new StringBuffer();
                Thread drain = Thread.ofPlatform().daemon().start(() -> r.lines().forEach(l -> serverSaid.append("server: ").append(l).append('\n')));
                Process client = new ProcessBuilder("ip", "netns", "exec", B, java, "--enable-native-access=ALL-UNNAMED",
                        "-cp", cp, TcpPeerMain.class.getName(), "client", "10.99.0.1", port).redirectErrorStream(true).start();
                String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(client.waitFor(300, TimeUnit.SECONDS), "the client ended: " + out);
                boolean serverEnded = server.waitFor(60, TimeUnit.SECONDS);
                drain.join(TimeUnit.SECONDS.toMillis(10));
                String both = out + serverSaid;
                System.out.print(both);
                assertEquals(0, client.exitValue(), both);
                assertTrue(out.contains("ok /10.99.0.1:" + port), both);
                assertTrue(serverEnded, "the server ends when its peer disconnects: " + both);
            } finally {
                server.destroyForcibly();
            }
        } finally {
            quietly("ip", "netns", "del", A);
            quietly("ip", "netns", "del", B);
        }
    }
}
