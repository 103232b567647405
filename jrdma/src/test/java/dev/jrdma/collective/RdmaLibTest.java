package dev.jrdma.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The rdma_lib facade: rdma_lib's server-with-two-clients all-to-all, and its error returns. */
class RdmaLibTest {
    private final Rdma rdma = Rdma.builder().provider("tcp").build();

    @AfterEach
    void close() {
        rdma.close();
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] msg(String text, int size) {
        return Arrays.copyOf(text.getBytes(StandardCharsets.US_ASCII), size);
    }

    @Test
    void theServerWithTwoClientsDemoCombinesEveryMessageOnEverySide() throws Exception {
        serverWithClients(rdma, "127.0.0.1", freePort(), java.util.List.of(rdma, rdma), java.util.List.of("127.0.0.1", "127.0.0.1"));
    }

    /**
     * rdma_lib's demo with {@code clientRdmas.size()} clients: the server accepts them, tells each
     * START, and all run the sequential all-to-all of one 64-byte message each; every member ends
     * with every message. Each client has its {@link Rdma} and local address (the same one for all
     * on tcp; a device of its own on verbs).
     */
    static void serverWithClients(Rdma serverRdma, String serverIp, int port, java.util.List<Rdma> clientRdmas,
                                  java.util.List<String> clientIps) throws Exception {
        int size = 64, n = clientRdmas.size();
        RdmaLib server = RdmaLib.init(serverRdma, serverIp, port, RdmaLib.BUFFER_SIZE * 4, true, RdmaLib.MAX_PEERS);
        java.util.List<CompletableFuture<byte[]>> clients = new java.util.ArrayList<>();
        for (int id = 1; id <= n; id++) {
            int me = id;
            clients.add(CompletableFuture.supplyAsync(() -> {
                try (RdmaLib c = RdmaLib.init(clientRdmas.get(me - 1), clientIps.get(me - 1), 0, RdmaLib.BUFFER_SIZE * 4, false,
                        RdmaLib.MAX_PEERS)) {
                    int s = c.connectPeer(serverIp, port);
                    assertEquals(0, s, RdmaLib.lastError());
                    byte[] start = new byte[size];
                    assertEquals(6, c.recv(s, start, size), RdmaLib.lastError());
                    assertEquals("START", new String(start, 0, 5, StandardCharsets.US_ASCII));
                    byte[] recv = new byte[RdmaLib.BUFFER_SIZE];
                    assertEquals(0, c.sequentialAllToAll(msg("Client " + me + " Message", size), recv, size), RdmaLib.lastError());
                    return recv;
                }
            }));
        }
        try (server) {
            for (int i = 0; i < n; i++) {
                assertEquals(i, server.acceptPeer(), RdmaLib.lastError());
            }
            byte[] start = "START\0".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < n; i++) {
                assertEquals(start.length, server.send(i, start, start.length), RdmaLib.lastError());
            }
            byte[] recv = new byte[RdmaLib.BUFFER_SIZE];
            assertEquals(0, server.sequentialAllToAll(msg("Server Message", size), recv, size), RdmaLib.lastError());
            // Peers are numbered in accept order, so which client is which peer is a race: check the set.
            java.util.Set<String> got = new java.util.HashSet<>(), sent = new java.util.HashSet<>();
            for (int i = 1; i <= n; i++) {
                got.add(new String(recv, i * size, size, StandardCharsets.US_ASCII).trim());
                sent.add("Client " + i + " Message");
            }
            assertEquals("Server Message", new String(recv, 0, size, StandardCharsets.US_ASCII).trim());
            assertEquals(sent, got);
            for (CompletableFuture<byte[]> c : clients) {
                assertArrayEquals(Arrays.copyOf(recv, (n + 1) * size), Arrays.copyOf(c.get(120, TimeUnit.SECONDS), (n + 1) * size),
                        "every client ends with the server's combined message");
            }
        }
    }

    @Test
    void errorsReturnMinusOneAndSayWhatWasWrong() {
        int port = freePort();
        try (RdmaLib client = RdmaLib.init(rdma, "127.0.0.1", 0, 128, false, 1)) {
            assertEquals(-1, client.send(0, new byte[8], 8));
            assertTrue(RdmaLib.lastError().contains("Invalid peer index 0 (0 peers)"), RdmaLib.lastError());
            assertEquals(-1, client.acceptPeer());
            assertEquals("Not a server context", RdmaLib.lastError());
            assertEquals(-1, client.connectPeer("127.0.0.1", port));
            assertTrue(RdmaLib.lastError().startsWith("Failed to connect to 127.0.0.1:" + port), RdmaLib.lastError());
            try (RdmaLib server = RdmaLib.init(rdma, "127.0.0.1", port, 128, true, 1)) {
                assertEquals(0, client.connectPeer("127.0.0.1", port), RdmaLib.lastError());
                assertEquals(0, server.acceptPeer(), RdmaLib.lastError());
                assertEquals(-1, client.connectPeer("127.0.0.1", port));
                assertEquals("Maximum number of peers reached (1)", RdmaLib.lastError());
                assertEquals(-1, client.send(0, new byte[200], 200));
                assertEquals("A message of 200 bytes does not fit the buffer of 128 bytes", RdmaLib.lastError());
                assertEquals(-1, client.send(0, new byte[8], 9));
                assertTrue(RdmaLib.lastError().startsWith("Invalid parameters"), RdmaLib.lastError());
                assertEquals(0, server.disconnectPeer(0));
                assertEquals(-1, server.send(0, new byte[8], 8));
                assertTrue(RdmaLib.lastError().startsWith("Peer 0 not connected"), RdmaLib.lastError());
                assertEquals(-1, server.disconnectPeer(3));
            }
        }
        assertNull(RdmaLib.init(rdma, "127.0.0.1", 1, 0, false, 1));
        assertTrue(RdmaLib.lastError().contains("buffer size 0"), RdmaLib.lastError());
    }
}
