package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A connection's quality of service on the wire, seen by tcpdump on the veth under the server's
 * Soft-RoCE device. {@link ConnectionConfig#trafficClass()}: the RoCEv2 packets (UDP port 4791)
 * of a connection whose client asked for traffic class 104 (DSCP 26) carry TOS 0x68, in both
 * directions (the server's queue pair takes the client's class from the connection request).
 * {@link ConnectionConfig#serviceLevel()} and {@link ConnectionConfig#flowLabel()}: the client's
 * connection request (a CM MAD to QP 1) carries them in its primary path, and the flow label
 * chooses the UDP source port of both queue pairs' packets (rxe keeps no service level, so the
 * request is where it shows).
 */
@Tag("verbs")
class QosVerbsTest {
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
                writeUntilCaptured(p, dump, netdev);
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

    @Test
    void aChosenServiceLevelAndFlowLabelAreInTheRequestAndChooseTheUdpSourcePort() throws Exception {
        String netdev = Netem.netdevs().get(0);
        int label = 0x12345;
        int sport = 0xC000 | ((label & 0x3FFF) ^ (label >>> 14));   // rdma_flow_label_to_udp_sport: 0xE341
        ConnectionConfig client = ConnectionConfig.builder().trafficClass(104).serviceLevel(5).flowLabel(label).build();
        File capture = File.createTempFile("jrdma-path", ".txt");
        // Started before connecting: the connection request is among what it must see.
        Process dump = new ProcessBuilder("tcpdump", "-i", netdev, "-n", "-x", "-l", "-c", String.valueOf(PACKETS),
                "udp", "port", "4791").redirectOutput(capture).start();
        try {
            awaitListening(dump);
            try (TestPair p = TestPair.open(Transport.verbs(), CompletionMode.POLLING, ConnectionConfig.defaults(), client)) {
                Connection serverSide = p.accepted().poll(20, TimeUnit.SECONDS);
                assertNotNull(serverSide, "the server accepted");
                assertEquals(label, p.conn().queuePair().flowLabel(), "client QP: " + p.conn().queuePair());
                assertEquals(label, serverSide.queuePair().flowLabel(), "server QP: " + serverSide.queuePair());
                assertEquals(104, serverSide.queuePair().trafficClass(), "the given path keeps the class: " + serverSide.queuePair());
                writeUntilCaptured(p, dump, netdev);
            }
        } finally {
            dump.destroyForcibly();
        }
        String text = Files.readString(capture.toPath());
        capture.delete();
        List<byte[]> packets = packets(text);
        assertEquals(PACKETS, packets.size(), "packets in tcpdump's output:\n" + text);
        byte[] request = null;
        List<String> dataSources = new ArrayList<>();
        for (byte[] ip : packets) {
            int udp = (ip[0] & 0x0F) * 4;   // IPv4 header length
            int bth = udp + 8;
            int destQp = (ip[bth + 5] & 0xFF) << 16 | (ip[bth + 6] & 0xFF) << 8 | (ip[bth + 7] & 0xFF);
            if (destQp == 1) {
                int mad = bth + 12 + 8;   // BTH, DETH
                int attribute = (ip[mad + 16] & 0xFF) << 8 | (ip[mad + 17] & 0xFF);
                if (ip[mad + 1] == 0x07 && attribute == 0x0010 && request == null) {   // CM class, ConnectRequest
                    request = Arrays.copyOfRange(ip, mad, ip.length);
                }
                continue;
            }
            int source = (ip[udp] & 0xFF) << 8 | (ip[udp + 1] & 0xFF);
            String from = (ip[12] & 0xFF) + "." + (ip[13] & 0xFF) + "." + (ip[14] & 0xFF) + "." + (ip[15] & 0xFF);
            assertEquals(sport, source, "the UDP source port of a data packet from " + from + " (flow label 0x12345)");
            assertEquals(0x68, ip[1] & 0xFF, "its TOS");
            if (!dataSources.contains(from)) {
                dataSources.add(from);
            }
        }
        assertNotNull(request, "the connection request among the captured packets:\n" + text);
        // cm_req_msg after the 24-byte MAD header: primary flow label in the top 20 bits of
        // byte 88's word, primary SL in the top 4 bits of byte 94 (IBTA vol. 1, 12.6.5).
        int word = (request[24 + 88] & 0xFF) << 24 | (request[24 + 89] & 0xFF) << 16 | (request[24 + 90] & 0xFF) << 8;
        assertEquals(label, word >>> 12, "the request's primary flow label");
        assertEquals(5, (request[24 + 94] & 0xFF) >>> 4, "the request's primary service level");
        assertEquals(2, dataSources.size(), "data packets from both ends (the server's QP took the client's path): " + dataSources);
    }

    @Test
    void withoutAChoiceTheFlowLabelIsRdmaCmsHashOfThePorts() throws Exception {
        // The hash ChosenPath uses for a path with a service level but no flow label: here checked
        // against what rdma_cm itself chose, and then with a chosen service level.
        for (ConnectionConfig client : List.of(ConnectionConfig.defaults(), ConnectionConfig.builder().serviceLevel(3).build())) {
            try (TestPair p = TestPair.open(Transport.verbs(), CompletionMode.POLLING, ConnectionConfig.defaults(), client)) {
                assertNotNull(p.accepted().poll(20, TimeUnit.SECONDS), "the server accepted");
                int expected = (p.conn().localAddress().getPort() * 31 + p.conn().remoteAddress().getPort()) & 0xFFFFF;
                assertEquals(expected, p.conn().queuePair().flowLabel(), client + ": " + p.conn().queuePair()
                        + " from " + p.conn().localAddress() + " to " + p.conn().remoteAddress());
            }
        }
    }

    /** tcpdump -x's packets: each a header line and then hex lines ("\t0x0000:  4500 0050 ..."). */
    private static List<byte[]> packets(String text) {
        List<byte[]> packets = new ArrayList<>();
        ByteArrayOutputStream current = null;
        for (String line : text.split("\n")) {
            Matcher hex = Pattern.compile("^\\s+0x[0-9a-f]+:\\s+((?:[0-9a-f]{2,4}\\s?)+)").matcher(line);
            if (hex.find()) {
                for (String group : hex.group(1).trim().split("\\s+")) {
                    for (int i = 0; i + 1 < group.length(); i += 2) {
                        current.write(Integer.parseInt(group.substring(i, i + 2), 16));
                    }
                }
            } else if (!line.isBlank()) {
                if (current != null) {
                    packets.add(current.toByteArray());
                }
                current = new ByteArrayOutputStream();
            }
        }
        if (current != null) {
            packets.add(current.toByteArray());
        }
        return packets;
    }

    /** Writes from the client (1000 at most, 60 s at most) until tcpdump has its packets and ends. */
    private static void writeUntilCaptured(TestPair p, Process dump, String netdev) throws Exception {
        LocalRegion buf = p.client().allocate(64);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (int i = 0; i < 1000 && dump.isAlive() && System.nanoTime() < deadline; i++) {
            p.conn().write(buf, p.remote().slice(0, 64)).get(20, TimeUnit.SECONDS);
        }
        assertTrue(dump.waitFor(30, TimeUnit.SECONDS), "tcpdump saw " + PACKETS + " RoCEv2 packets on " + netdev);
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
        } catch (TimeoutException e) {
            fail("tcpdump did not say it listens within 60 s");
        }
    }
}
