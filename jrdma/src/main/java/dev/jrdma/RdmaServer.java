package dev.jrdma;

import dev.jrdma.spi.CmListener;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A listening address. Each accepted connection is handed to the accept callback (on the IO
 * thread) once it is established; set its {@link Connection#onReceive} there.
 */
public final class RdmaServer implements AutoCloseable {
    private final Rdma rdma;
    final CmListener listener;
    final ConnectionConfig config;
    final Consumer<Connection> onAccept;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    RdmaServer(Rdma rdma, CmListener listener, ConnectionConfig config, Consumer<Connection> onAccept) {
        this.rdma = rdma;
        this.listener = listener;
        this.config = config;
        this.onAccept = onAccept;
    }

    /** {@return the bound address (with the port chosen when 0 was asked)} */
    public InetSocketAddress address() {
        return listener.address();
    }

    /** {@return the live connections accepted here} */
    public List<Connection> connections() {
        return List.copyOf(connections);
    }

    void add(Connection c) {
        connections.add(c);
    }

    void forget(Connection c) {
        connections.remove(c);
    }

    boolean isClosed() {
        return closed;
    }

    /** Stops listening and closes every connection accepted here. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        rdma.control().closeServer(this);
        for (Connection c : List.copyOf(connections)) {
            c.close();
        }
    }
}
