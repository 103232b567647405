package dev.jrdma.examples.alltoall;

import dev.jrdma.collective.RdmaLib;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * rdma_lib's server example, ported line for line through {@link RdmaLib}: accepts two clients,
 * sends them START, then runs the sequential all-to-all and prints the combined messages.
 *
 * <pre>
 *   bin/jrdma-example alltoall-server IP PORT          (then two alltoall-client)
 * </pre>
 */
public final class RdmaLibServer {
    static final int MSG_SIZE = 64;
    static final int NUM_CLIENTS = 2;

    private RdmaLibServer() {
    }

    public static void main(String[] args) {
        String serverIp = args.length > 0 ? args[0] : "127.0.0.1";
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 5555;
        System.out.println("Server starting on IP " + serverIp + "...");
        RdmaLib ctx = RdmaLib.init(serverIp, port, RdmaLib.BUFFER_SIZE * 4, true);
        if (ctx == null) {
            System.err.println("Failed to initialize RDMA: " + RdmaLib.lastError());
            System.exit(1);
        }
        try (ctx) {
            for (int i = 0; i < NUM_CLIENTS; i++) {
                System.out.println("Waiting for client " + (i + 1) + "...");
                if (ctx.acceptPeer() < 0) {
                    System.err.println("Failed to accept client " + (i + 1) + ": " + RdmaLib.lastError());
                    System.exit(1);
                }
                System.out.println("Client " + (i + 1) + " connected");
            }
            byte[] start = "START\0".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < NUM_CLIENTS; i++) {
                if (ctx.send(i, start, start.length) < 0) {
                    System.err.println("Failed to send start message: " + RdmaLib.lastError());
                    System.exit(1);
                }
            }
            byte[] sendMsg = Arrays.copyOf("Server Message".getBytes(StandardCharsets.US_ASCII), MSG_SIZE);
            byte[] recvBuf = new byte[RdmaLib.BUFFER_SIZE];
            System.out.println("Sending: 'Server Message'");
            if (ctx.sequentialAllToAll(sendMsg, recvBuf, MSG_SIZE) < 0) {
                System.err.println("All-to-all failed: " + RdmaLib.lastError());
                System.exit(1);
            }
            System.out.println("Received combined messages: '" + combined(recvBuf, NUM_CLIENTS + 1) + "'");
        }
    }

    /** The combined message as rdma_lib prints it: each part's text, joined with "; ". */
    static String combined(byte[] buf, int parts) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < parts; i++) {
            int from = i * MSG_SIZE, end = from;
            while (end < from + MSG_SIZE && buf[end] != 0) {
                end++;
            }
            b.append(new String(buf, from, end - from, StandardCharsets.US_ASCII)).append(i < parts - 1 ? "; " : ";");
        }
        return b.toString();
    }
}
