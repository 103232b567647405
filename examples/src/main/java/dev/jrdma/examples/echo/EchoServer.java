package dev.jrdma.examples.echo;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.CountDownLatch;

/**
 * A SnowRDMA-style echo server: every message a client sends comes back to it, sent from the
 * receive callback with a completion handler, no future, nothing allocated per message.
 *
 * <pre>
 *   bin/jrdma-example echo-server DEVICE IP PORT
 * </pre>
 */
public final class EchoServer {
    /** Nothing to do when an echo has been sent; a failed one is logged by its connection. */
    private static final CompletionHandler<Void, Object> SENT = new CompletionHandler<>() {
        @Override
        public void completed(Void result, Object attachment) {
        }

        @Override
        public void failed(Throwable e, Object attachment) {
            System.err.println("echo not sent: " + e.getMessage());
        }
    };

    private EchoServer() {
    }

    /**
     * Listens on {@code address}. Each connection gets a ring of reply buffers, one per receive
     * buffer: a client can have at most that many messages on their way, so a reply buffer is
     * never reused before its echo has been sent.
     */
    public static RdmaServer start(Rdma rdma, InetSocketAddress address, ConnectionConfig config) {
        return rdma.listen(address, config, connection -> {
            int slots = config.receiveQueueDepth();
            LocalRegion replies = rdma.allocate((long) slots * config.receiveBufferSize());
            int[] next = {0};
            connection.onDisconnect(c -> replies.close());
            connection.onReceive((Connection c, Message msg) -> {
                // The callback runs on the IO thread; msg.data() is valid until it returns.
                LocalRegion reply = replies.slice((long) next[0] * config.receiveBufferSize(), msg.byteCount());
                next[0] = (next[0] + 1) % slots;
                MemorySegment.copy(msg.data(), 0, reply.segment(), 0, msg.byteCount());
                c.send(reply, null, SENT);
            });
        });
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: echo-server DEVICE IP PORT");
            System.exit(2);
        }
        try (Rdma rdma = Rdma.builder().device(args[0]).build();
             RdmaServer server = start(rdma, new InetSocketAddress(args[1], Integer.parseInt(args[2])),
                     ConnectionConfig.defaults())) {
            System.out.println("echo server on " + server.address() + " (" + rdma.deviceName() + "), Ctrl-C to stop");
            new CountDownLatch(1).await();
        }
    }
}
