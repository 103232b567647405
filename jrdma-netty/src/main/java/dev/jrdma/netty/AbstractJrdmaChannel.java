package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * The life of a channel over one jrdma connection, as Netty's {@code AbstractEpollChannel} is
 * for a socket: registration on the {@link JrdmaEventLoop} that serves the connection, the client's
 * connect (its promise, its timeout, its cancellation), the open and active state
 * ({@link ChannelState}), the addresses, and the close of all of that. What runs over the
 * connection (the byte stream, its reads, writes and half-closure) is the subclass's
 * ({@link JrdmaSocketChannel}), told through {@link #connectionMade}, {@link #connectionActive},
 * {@link #onRegistered} and {@link #closeConnection}.
 *
 * <p>Threads: the channel's event loop owns all of this. The state is also read from any thread
 * ({@code isOpen}, {@code isActive}, {@code isInputShutdown}), so it is volatile. The addresses
 * are plain fields, written before the channel is active (in the constructor, or when the connect
 * completes) and read from other threads through {@code AbstractChannel}'s
 * {@code localAddress()}/{@code remoteAddress()}, which keep them in volatile fields once read. An
 * accepted channel's constructor runs on its connection's IO loop, and the server's loop may close
 * an accepted channel that was never registered ({@code closeForcibly}).
 */
abstract class AbstractJrdmaChannel extends AbstractChannel {
    /** For an accepted channel: the group that accepted it (its loops serve the connection); else null. */
    private final JrdmaEventLoopGroup.Shared acceptedBy;
    private volatile ChannelState state;
    private Connection connection;
    /** Pending while {@link ChannelState#CONNECTING}; null otherwise. */
    private ChannelPromise connectPromise;
    private Future<?> connectTimeout;
    private InetSocketAddress requestedRemote;
    private InetSocketAddress local;
    private InetSocketAddress remote;

    /** A client channel: it connects with {@code connect(address)}. */
    AbstractJrdmaChannel() {
        super(null);
        this.acceptedBy = null;
        this.state = ChannelState.OPEN;
    }

    /** An accepted channel, on its connection's IO loop: connected from the start. */
    AbstractJrdmaChannel(Channel parent, Connection connection, JrdmaEventLoopGroup.Shared acceptedBy) {
        super(parent);
        this.acceptedBy = acceptedBy;
        this.connection = connection;
        this.state = ChannelState.ACTIVE;
        this.local = connection.localAddress();
        this.remote = connection.remoteAddress();
    }

    /** How the client's connection is set up (read when it connects). */
    abstract ConnectionConfig connectionConfig();

    /**
     * The connection the client asked for was made: set up what runs over it, without reading
     * yet (the channel is not active yet). A RuntimeException refuses the connection: it is
     * closed, the connect fails and the channel closes.
     */
    abstract void connectionMade(Connection c);

    /** The connected client is active (channelActive told, its connect promise succeeded): start reading. */
    abstract void connectionActive();

    /** Registered on its event loop (and added to the loop's channels). */
    abstract void onRegistered();

    /** The channel closed, and was open until now: end the connection (once per channel). */
    abstract void closeConnection();

    JrdmaEventLoopGroup.Shared acceptedBy() {
        return acceptedBy;
    }

    Connection connection() {
        return connection;
    }

    /** {@return the channel's state; any thread} */
    final ChannelState state() {
        return state;
    }

    /**
     * Moves the input's end on: to {@link ChannelState#INPUT_SHUTDOWN}, or to
     * {@link ChannelState#INPUT_SHUTDOWN_READ_COMPLETE}; on the event loop, while active.
     */
    final void setInputState(ChannelState next) {
        assert state.isActive() && next.isActive() && next != ChannelState.ACTIVE : state + " -> " + next;
        state = next;
    }

    @Override
    public boolean isOpen() {
        return state.isOpen();
    }

    @Override
    public boolean isActive() {
        return state.isActive();
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) super.remoteAddress();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        if (!(loop instanceof JrdmaEventLoop l)) {
            return false;
        }
        return acceptedBy == null ? connection == null || l.serves(connection) : l.shared() == acceptedBy && l.serves(connection);
    }

    @Override
    protected void doRegister() {
        ((JrdmaEventLoop) eventLoop()).add(this);
        onRegistered();
    }

    @Override
    protected void doDeregister() {
        ((JrdmaEventLoop) eventLoop()).remove(this);
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("a jrdma client channel does not bind: the connection manager picks the "
                + "local address (bind a JrdmaServerChannel to listen)");
    }

    @Override
    protected void doDisconnect() throws Exception {
        doClose();
    }

    @Override
    protected final void doClose() throws Exception {
        boolean wasOpen = state.isOpen();
        state = ChannelState.CLOSED;
        ChannelPromise p = takeConnectPromise();
        if (p != null) {
            p.tryFailure(new ClosedChannelException());
        }
        cancelConnectTimeout();
        if (wasOpen) {
            closeConnection();
        }
    }

    /** Takes the pending connect's promise (null when none): the channel connects no more, and stays open unless closed. */
    private ChannelPromise takeConnectPromise() {
        ChannelPromise p = connectPromise;
        connectPromise = null;
        if (state == ChannelState.CONNECTING) {
            state = ChannelState.OPEN;
        }
        return p;
    }

    private void cancelConnectTimeout() {
        Future<?> t = connectTimeout;
        connectTimeout = null;
        if (t != null) {
            t.cancel(false);
        }
    }

    /** The client's connect: jrdma's connection manager makes the connection on the loop's IO loop. */
    abstract class AbstractJrdmaUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            if (promise.isDone() || !ensureOpen(promise)) {
                return;
            }
            try {
                if (state.isActive()) {
                    throw new AlreadyConnectedException();
                }
                if (state == ChannelState.CONNECTING) {
                    throw new ConnectionPendingException();
                }
                if (!(remoteAddress instanceof InetSocketAddress r)) {
                    throw new UnsupportedAddressTypeException();
                }
                if (localAddress != null) {
                    throw new UnsupportedOperationException("a jrdma channel connects from the address the connection "
                            + "manager picks: a local address cannot be given (" + localAddress + ")");
                }
                requestedRemote = r;
                JrdmaEventLoop loop = (JrdmaEventLoop) eventLoop();
                CompletableFuture<Connection> f = loop.shared().rdma.connectAsync(r, connectionConfig(), loop.ioLoop());
                connectPromise = promise;
                state = ChannelState.CONNECTING;
                scheduleConnectTimeout(loop, r);
                promise.addListener((ChannelFutureListener) future -> {
                    if (future.isCancelled()) {
                        cancelConnectTimeout();
                        takeConnectPromise();
                        close(voidPromise());
                    }
                });
                f.whenComplete((c, e) -> {
                    if (loop.inEventLoop()) {
                        finishConnect(c, e);
                    } else {
                        loop.execute(() -> finishConnect(c, e));
                    }
                });
            } catch (Throwable t) {
                promise.tryFailure(annotateConnectException(t, remoteAddress));
                closeIfClosed();
            }
        }

        /** CONNECT_TIMEOUT_MILLIS (when above 0): the connect fails and the channel closes. */
        private void scheduleConnectTimeout(JrdmaEventLoop loop, InetSocketAddress r) {
            int timeoutMillis = config().getConnectTimeoutMillis();
            if (timeoutMillis > 0) {
                connectTimeout = loop.schedule(() -> {
                    ChannelPromise p = connectPromise;
                    if (p != null && !p.isDone() && p.tryFailure(new ConnectTimeoutException(
                            "connection timed out after " + timeoutMillis + " ms: " + r))) {
                        close(voidPromise());
                    }
                }, timeoutMillis, TimeUnit.MILLISECONDS);
            }
        }

        private void finishConnect(Connection c, Throwable e) {
            cancelConnectTimeout();
            ChannelPromise promise = takeConnectPromise();
            if (promise == null || promise.isDone() || !isOpen()) {
                if (c != null) {
                    c.close();   // given up on (timed out, cancelled, closed): nobody takes it
                }
                return;
            }
            if (e != null) {
                Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                promise.tryFailure(connectFailure(cause));
                close(voidPromise());
                return;
            }
            try {
                connection = c;
                connectionMade(c);
            } catch (RuntimeException bad) {
                c.close();
                connection = null;
                promise.tryFailure(bad);
                close(voidPromise());
                return;
            }
            local = c.localAddress();
            remote = c.remoteAddress();
            boolean wasActive = isActive();
            state = ChannelState.ACTIVE;
            boolean nowActive = isActive();   // before the promise's listeners run: one may close it (as epoll does)
            boolean promiseSet = promise.trySuccess();
            if (!wasActive && nowActive) {
                pipeline().fireChannelActive();
            }
            if (!promiseSet) {
                close(voidPromise());
                return;
            }
            connectionActive();   // after channelActive: what came already is read, an end already seen is told
        }

        private Throwable connectFailure(Throwable cause) {
            if (cause instanceof ConnectionRejectedException) {
                ConnectException ce = new ConnectException("Connection refused: " + requestedRemote + " (" + cause.getMessage() + ")");
                ce.initCause(cause);
                return ce;
            }
            if (cause instanceof RdmaTimeoutException) {
                ConnectTimeoutException te = new ConnectTimeoutException("connection timed out: " + requestedRemote
                        + " (" + cause.getMessage() + ")");
                te.initCause(cause);
                return te;
            }
            ConnectException ce = new ConnectException("could not connect to " + requestedRemote + ": " + cause.getMessage());
            ce.initCause(cause);
            return ce;
        }
    }
}
