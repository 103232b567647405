package dev.jrdma;

import dev.jrdma.engine.io.IoThreads;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.Device;

import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The control steps of one {@link Rdma} that go through its connection manager: listen, close a
 * server, connect (a first life, or a reconnect's further one), open a datagram endpoint. Each
 * checks its arguments on the caller's thread, then runs on IO thread 0, the connection
 * manager's; what it makes is registered in {@link LiveObjects}.
 *
 * <p>Threads: any caller; the connection manager is touched on IO thread 0 only.
 */
final class ControlSteps {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final Rdma rdma;
    private final LiveObjects live;
    private final IoThreads io;
    private final Device device;

    ControlSteps(Rdma rdma, LiveObjects live, IoThreads io, Device device) {
        this.rdma = rdma;
        this.live = live;
        this.io = io;
        this.device = device;
    }

    /** {@link Rdma#listen(InetSocketAddress, ConnectionConfig, Consumer)}: the listener made on IO thread 0, awaited. */
    RdmaServer listen(InetSocketAddress address, ConnectionConfig config, Consumer<Connection> onAccept) {
        live.checkOpen();
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(onAccept, "onAccept");
        checkConfig(config);
        CompletableFuture<RdmaServer> f = new CompletableFuture<>();
        io.execute(() -> {
            try {
                CmListener l = io.cm().listen(address, Rdma.LISTEN_BACKLOG);
                RdmaServer s = new RdmaServer(rdma, l, config, onAccept);
                live.add(s);
                String warning = exposureWarning(l.address(), config);
                if (warning != null) {
                    LOG.log(System.Logger.Level.WARNING, warning);
                }
                f.complete(s);
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return io.await(f, IoThreads.CONTROL_TIMEOUT);
    }

    /**
     * What {@link Rdma#listen} warns of (once per listener), or null: a listener that other hosts can
     * reach and that asks no auth token lets anyone who reaches the port connect.
     */
    static String exposureWarning(InetSocketAddress bound, ConnectionConfig config) {
        if (bound.getAddress().isLoopbackAddress() || config.authTokenRef().length > 0) {
            return null;
        }
        return "listening on " + bound + " without an auth token: anyone who can reach this port can connect, send"
                + " messages, and read, write and run atomics on every region whose descriptor (address, length, key)"
                + " it is given or guesses; set ConnectionConfig.authToken to refuse other clients. The token travels"
                + " in clear and can be replayed: across networks you do not trust, run jrdma inside a VPN or IPsec"
                + " (see the README's security section)";
    }

    /** Stops {@code s} listening, on IO thread 0; waits for it unless called there. */
    void closeServer(RdmaServer s) {
        live.forget(s);
        CompletableFuture<Void> done = new CompletableFuture<>();
        io.execute(() -> {
            s.listener.close();
            done.complete(null);
        });
        if (!io.control().inThisThread()) {
            io.await(done, IoThreads.CONTROL_TIMEOUT);
        }
    }

    /** Connects; for a reconnect, the new connection is a further life of {@code handle}. */
    CompletableFuture<Connection> connectLife(InetSocketAddress address, ConnectionConfig config, Connection handle) {
        // A further life stays on the first one's IO thread: its callbacks keep their thread.
        return connect(address, config, handle, handle == null ? null : handle.io);
    }

    /**
     * Starts connecting, the connection served by {@code on} (null: the next IO thread); the future
     * ends within the config's timeout, failed with the reason if it could not connect.
     */
    CompletableFuture<Connection> connect(InetSocketAddress address, ConnectionConfig config, Connection handle, IoThread on) {
        live.checkOpen();
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(config, "config");
        checkConfig(config);
        IoThread t = on != null ? on : io.pick();
        Connection c = new Connection(rdma, t, config, address, null, handle);
        live.add(c);
        int timeoutMs = (int) config.timeout().toMillis();
        io.execute(() -> c.life.connect(device, io.channelOf(t), io.cm()));
        // A timer of its own, not orTimeout on the future itself: that would fail it with a bare
        // TimeoutException before failConnect could give the reason (and clean up). It is
        // dropped as soon as the connect ends either way.
        CompletableFuture<Void> timer = new CompletableFuture<>();
        c.life.connected.whenComplete((v, e) -> timer.complete(null));
        timer.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).exceptionally(e -> {
            if (e instanceof TimeoutException && !live.isClosed()) {
                io.execute(() -> c.life.failConnect(new RdmaTimeoutException("connecting to " + address
                        + " did not complete within " + config.timeout())));
            }
            return null;
        });
        return c.life.connected;
    }

    /** {@link Rdma#datagramEndpoint(InetSocketAddress, int, int, int)}: checked, opened on IO thread 0, awaited. */
    DatagramEndpoint datagramEndpoint(InetSocketAddress bind, int receiveBuffers, int sendDepth, int maxSenders) {
        live.checkOpen();
        DatagramEndpoint.checkMaxSenders(maxSenders);
        if (bind == null || bind.isUnresolved()) {
            throw new IllegalArgumentException("datagramEndpoint needs a resolved address to bind, not " + bind);
        }
        if (receiveBuffers < 1 || receiveBuffers > 65536) {
            throw new IllegalArgumentException("receiveBuffers must be 1 to 65536, not " + receiveBuffers);
        }
        if (sendDepth < 1 || sendDepth > 4096) {
            throw new IllegalArgumentException("sendDepth must be 1 to 4096, not " + sendDepth);
        }
        IoThread t = io.pick();
        CompletableFuture<DatagramQueuePair> opened = new CompletableFuture<>();
        io.execute(() -> {
            try {
                opened.complete(io.cm().openDatagram(bind, io.channelOf(t), sendDepth, receiveBuffers));
            } catch (RuntimeException e) {
                opened.completeExceptionally(e);
            }
        });
        DatagramQueuePair qp = io.await(opened, IoThreads.CONTROL_TIMEOUT);
        DatagramEndpoint e;
        try {
            e = new DatagramEndpoint(rdma, t, qp, receiveBuffers, IoThreads.CONTROL_TIMEOUT.dividedBy(3), maxSenders);
        } catch (RuntimeException x) {
            io.execute(qp::close);
            throw x;
        }
        live.add(e);
        return e;
    }

    /** A config fits the device, and a shared receive queue it names is this instance's and open. */
    private void checkConfig(ConnectionConfig config) {
        config.validateFor(device.capabilities(), device.name());
        SharedReceiveQueue q = config.sharedReceiveQueue();
        if (q != null && q.rdma() != rdma) {
            throw new IllegalArgumentException("the config's " + q + " belongs to another Rdma instance (a shared receive"
                    + " queue serves connections of the Rdma that made it)");
        }
        if (q != null && !live.isOpen(q)) {
            throw new IllegalStateException("the config's shared receive queue is closed");
        }
    }
}
