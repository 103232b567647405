package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link ConnectionConfig#trafficClass()} on the wire: tcpdump on the veth under the server's
 * Soft-RoCE device sees the RoCEv2 packets (UDP port 4791) of a connection whose client asked for
 * traffic class 104 (DSCP 26) carry TOS 0x68, in both directions: the server's queue pair takes
 * the client's class from the connection request.
 */
@Tag("verbs")
class TrafficClassVerbsTest {
    private static final int PACKETS = 20;

    @Test
    void theClientsTrafficClassIsOnTheWireInBothDirections() throws Exception {
        String netdev = Netem.netdevs().get(0);
        ConnectionConfig client = ConnectionConfig.builder().trafficClass(104).build();
        File capture = File.createTempFile("jrdma-tos", ".txt");
        try (TestPair p = TestPair.open(Transport.verbs(), CompletionMode.POLLING, ConnectionConfig.defaults(), client)) {
            assertNotNull(p.accepted().poll(20, TimeUnit.SECONDS), "the server accepted");
            // Started once connected: what it sees is the data path's packets, not rdma_cm's MADs.
            Process dump = new ProcessBuilder("tcpdump", "-i", netdev, "-n", "-v", "-l", "-c", String.valueOf(PACKETS),
                    "udp", "port", "4791").redirectOutput(capture).start();
            try {
                awaitListening(dump);
                LocalRegion buf = p.client().allocate(64);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                for (int i = 0; i < 1000 && dump.isAlive() && System.nanoTime() < deadline; i++) {
                    p.conn().write(buf, p.remote().slice(0, 64)).get(20, TimeUnit.SECONDS);
                }
                assertTrue(dump.waitFor(30, TimeUnit.SECONDS), "tcpdump saw " + PACKETS + " RoCEv2 packets on " + netdev);
            } finally {
                dump.destroyForcibly();
            }
        }
        String text = Files.readString(capture.toPath());
        capture.delete();
        // "IP (tos 0x68, ttl 64, ..., proto UDP (17), length 80)" then "    10.77.0.2.49153 > 10.77.0.1.4791: UDP, length 52"
        Matcher m = Pattern.compile("IP \\(tos (0x[0-9a-f]+)[^\\n]*\\n\\s+(\\S+)\\.\\d+ > (\\S+)\\.\\d+:").matcher(text);
        List<String> tos = new ArrayList<>();
        List<String> sources = new ArrayList<>();
        while (m.find()) {
            tos.add(m.group(1));
            if (!sources.contains(m.group(2))) {
                sources.add(m.group(2));
            }
        }
        assertEquals(PACKETS, tos.size(), "RoCEv2 packets in tcpdump's output:\n" + text);
        assertTrue(tos.stream().allMatch("0x68"::equals), "every packet with TOS 0x68 (104): " + tos + "\n" + text);
        assertEquals(2, sources.size(), "packets from both ends (the server's QP took the client's class): " + sources);
    }

    /** Until tcpdump says it listens (on stderr), 60 s at most; its other stderr lines are passed on. */
    private static void awaitListening(Process dump) throws Exception {
        CompletableFuture<Void> listening = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("tcpdump-stderr").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(dump.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.contains("listening on")) {
                        listening.complete(null);
                    } else {
                        System.err.println("tcpdump: " + line);
                    }
                }
                listening.completeExceptionally(new IllegalStateException("tcpdump ended (exit " + dump.waitFor()
                        + ") before it listened: is it installed (Debian package tcpdump)?"));
            } catch (Exception e) {
                listening.completeExceptionally(e);
            }
        });
        try {
            listening.get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            fail("tcpdump did not say it listens within 60 s");
        }
    }
}
