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
        int port = freePort(), size = 64;
        RdmaLib server = RdmaLib.init(rdma, "127.0.0.1", port, RdmaLib.BUFFER_SIZE * 4, true, RdmaLib.MAX_PEERS);
        CompletableFuture<byte[]>[] clients = new CompletableFuture[2];
        for (int id = 1; id <= 2; id++) {
            int me = id;
            clients[id - 1] = CompletableFuture.supplyAsync(() -> {
                try (RdmaLib c = RdmaLib.init(rdma, "127.0.0.1", 0, RdmaLib.BUFFER_SIZE * 4, false, RdmaLib.MAX_PEERS)) {
                    int s = c.connectPeer("127.0.0.1", port);
                    assertEquals(0, s, RdmaLib.lastError());
                    byte[] start = new byte[size];
                    assertEquals(6, c.recv(s, start, size), RdmaLib.lastError());
                    assertEquals("START", new String(start, 0, 5, StandardCharsets.US_ASCII));
                    byte[] recv = new byte[RdmaLib.BUFFER_SIZE];
                    assertEquals(0, c.sequentialAllToAll(msg("Client " + me + " Message", size), recv, size), RdmaLib.lastError());
                    return recv;
                }
            });
        }
        try (server) {
            assertEquals(0, server.acceptPeer(), RdmaLib.lastError());
            assertEquals(1, server.acceptPeer(), RdmaLib.lastError());
            byte[] start = "START\0".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < 2; i++) {
                assertEquals(start.length, server.send(i, start, start.length), RdmaLib.lastError());
            }
            byte[] recv = new byte[RdmaLib.BUFFER_SIZE];
            assertEquals(0, server.sequentialAllToAll(msg("Server Message", size), recv, size), RdmaLib.lastError());
            // Peers are numbered in accept order, so which client is peer 0 is a race: check the set.
            String first = new String(recv, size, size, StandardCharsets.US_ASCII).trim(), second =
                    new String(recv, 2 * size, size, StandardCharsets.US_ASCII).trim();
            assertEquals("Server Message", new String(recv, 0, size, StandardCharsets.US_ASCII).trim());
            assertEquals(java.util.Set.of("Client 1 Message", "Client 2 Message"), java.util.Set.of(first, second));
            for (CompletableFuture<byte[]> c : clients) {
                assertArrayEquals(Arrays.copyOf(recv, 3 * size), Arrays.copyOf(c.get(60, TimeUnit.SECONDS), 3 * size),
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
