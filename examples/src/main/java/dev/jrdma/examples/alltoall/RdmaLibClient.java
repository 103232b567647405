package dev.jrdma.examples.alltoall;

import dev.jrdma.collective.RdmaLib;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * rdma_lib's client example, ported line for line through {@link RdmaLib}: connects to the
 * server, waits for START, takes part in the sequential all-to-all and prints the combined
 * messages.
 *
 * <pre>
 *   bin/jrdma-example alltoall-client CLIENT_ID SERVER_IP PORT
 * </pre>
 */
public final class RdmaLibClient {
    private RdmaLibClient() {
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("Usage: alltoall-client <client_id> [server_ip [port]]");
            System.exit(1);
        }
        int clientId = Integer.parseInt(args[0]);
        String serverIp = args.length > 1 ? args[1] : "127.0.0.1";
        int port = args.length > 2 ? Integer.parseInt(args[2]) : 5555;
        int msgSize = RdmaLibServer.MSG_SIZE;
        System.out.println("Client " + clientId + " starting...");
        RdmaLib ctx = RdmaLib.init(serverIp, 0, RdmaLib.BUFFER_SIZE * 4, false);
        if (ctx == null) {
            System.err.println("Failed to initialize RDMA: " + RdmaLib.lastError());
            System.exit(1);
        }
        try (ctx) {
            System.out.println("Connecting to server " + serverIp + "...");
            int serverIdx = ctx.connectPeer(serverIp, port);
            if (serverIdx < 0) {
                System.err.println("Failed to connect to server: " + RdmaLib.lastError());
                System.exit(1);
            }
            byte[] startMsg = new byte[msgSize];
            if (ctx.recv(serverIdx, startMsg, msgSize) < 0) {
                System.err.println("Failed to receive start signal: " + RdmaLib.lastError());
                System.exit(1);
            }
            System.out.println("Received start signal: " + new String(startMsg, 0, 5, StandardCharsets.US_ASCII));
            String text = "Client " + clientId + " Message";
            byte[] sendMsg = Arrays.copyOf(text.getBytes(StandardCharsets.US_ASCII), msgSize);
            byte[] recvBuf = new byte[RdmaLib.BUFFER_SIZE];
            System.out.println("Sending: '" + text + "'");
            if (ctx.sequentialAllToAll(sendMsg, recvBuf, msgSize) < 0) {
                System.err.println("All-to-all failed: " + RdmaLib.lastError());
                System.exit(1);
            }
            System.out.println("Received combined: '" + RdmaLibServer.combined(recvBuf, RdmaLibServer.NUM_CLIENTS + 1) + "'");
        }
    }
}
