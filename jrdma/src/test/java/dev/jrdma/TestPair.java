package dev.jrdma;


import java.lang.foreign.MemorySegment;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.UnaryOperator;

/**
 * For the conformance tests: a server Rdma (on one Soft-RoCE device for verbs) that echoes every message back
 * (imm = its length; a write-with-imm notice is answered with an empty message carrying its imm)
 * and exposes one 8 KiB region, and a client Rdma (on the other device), connected.
 */
record TestPair(Rdma server, Rdma client, RdmaServer listener, LocalRegion exposed, Connection conn,
                 LinkedBlockingQueue<Connection> accepted) implements AutoCloseable {

    static TestPair open(Transport t, CompletionMode mode, ConnectionConfig serverConfig, ConnectionConfig clientConfig,
                         UnaryOperator<Rdma.Builder> clientOptions) {
        Rdma server = t.server().completionMode(mode).build();
        Rdma client = null;
        try {
            client = clientOptions.apply(t.client().completionMode(mode)).build();
            LocalRegion exposed = server.allocate(8192);
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(t.nextServerAddress(), serverConfig, c -> {
                accepted.add(c);
                c.onReceive((conn, msg) -> {
                    if (msg.isWrite()) {   // a write-with-imm notice: answer its imm, no data
                        LocalRegion empty = server.allocate(1);
                        conn.sendWithImm(msg.imm().orElse(-1), empty.slice(0, 0)).whenComplete((v, e) -> empty.close());
                        return;
                    }
                    LocalRegion reply = server.allocate(Math.max(1, msg.byteCount()));
                    MemorySegment.copy(msg.data(), 0, reply.segment(), 0, msg.byteCount());
                    conn.sendWithImm(msg.byteCount(), reply.slice(0, msg.byteCount())).whenComplete((v, e) -> reply.close());
                });
            });
            Connection conn = client.connect(l.address(), clientConfig);
            return new TestPair(server, client, l, exposed, conn, accepted);
        } catch (RuntimeException | Error e) {
            if (client != null) {
                client.close();
            }
            server.close();
            throw e;
        }
    }

    static TestPair open(Transport t, CompletionMode mode, ConnectionConfig serverConfig, ConnectionConfig clientConfig) {
        return open(t, mode, serverConfig, clientConfig, b -> b);
    }

    static TestPair open(Transport t, CompletionMode mode) {
        return open(t, mode, ConnectionConfig.defaults(), ConnectionConfig.defaults());
    }

    /** The exposed region as the client knows it: through its descriptor. */
    RemoteRegion remote() {
        return RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor());
    }

    @Override
    public void close() {
        client.close();
        server.close();
    }
}
