package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.FileRegion;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.Future;
import io.netty.util.internal.StringUtil;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A stream channel over a jrdma connection, used as Netty's socket channels are: a client with
 * {@code new Bootstrap().group(jrdmaGroup).channel(JrdmaSocketChannel.class)}, and the children of
 * a {@link JrdmaServerChannel}. Bytes go as described in {@link ByteStream}: copied once each way,
 * flow-controlled with credits, in order; half-closure, abortive close ({@code SO_LINGER} 0: the
 * peer sees "Connection reset") and graceful close are carried in the stream's own messages
 * ({@link StreamMessage}).
 *
 * <p>It runs on a {@link JrdmaEventLoop} of the group whose {@code Rdma} made its connection, on
 * the loop that serves the connection. File regions are refused: there is no file descriptor to
 * send from.
 */
public final class JrdmaSocketChannel extends AbstractChannel implements SocketChannel {
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private final JrdmaSocketChannelConfig config;
    /** For an accepted channel: the group that accepted it (its loops serve the connection); else null. */
    private final JrdmaEventLoopGroup.Shared acceptedBy;
    private Connection connection;
    private ByteStream stream;
    // Read from any thread (isOpen, isActive, isInputShutdown...), written on the event loop.
    private volatile boolean open = true;
    private volatile boolean active;
    private volatile boolean inputShutdown;
    private boolean inputShutdownReadCompleteFired;
    private volatile boolean outputShutdown;
    private boolean readPending;
    private boolean inRead;
    private ChannelPromise connectPromise;
    private Future<?> connectTimeout;
    private InetSocketAddress requestedRemote;
    private InetSocketAddress local;
    private InetSocketAddress remote;
    /**
     * A read round queued on the loop: at most one at a time, as epoll's loop has one read pending
     * at most. Two chains of rounds (a read() asked while the stream's own round had queued the
     * next) end in extra rounds that find nothing and fire channelReadComplete with no data, more
     * than Netty's testsuite allows after the end of input; the one queued round does every read.
     */
    private boolean readScheduled;
    /** What the stream tells this channel. */
    private final StreamEvents events = new StreamEvents();
    private final Runnable readTask = () -> {
        readScheduled = false;
        readInbound();
    };
    /** A reset waiting for the bytes that came before it to be read. */
    private IOException resetCause;
    /** The connection ended before an accepted channel was registered: told once it is. */
    private boolean goneBeforeRegistered;
    private IOException goneCause;

    /** A client channel: it connects with {@code connect(address)}. */
    public JrdmaSocketChannel() {
        super(null);
        this.config = new JrdmaSocketChannelConfig(this);
        this.acceptedBy = null;
    }

    /** An accepted channel, on its connection's IO loop: the stream starts now, so nothing that arrives is lost. */
    JrdmaSocketChannel(JrdmaServerChannel parent, Connection connection, JrdmaEventLoopGroup.Shared acceptedBy) {
        super(parent);
        this.config = new JrdmaSocketChannelConfig(this);
        this.acceptedBy = acceptedBy;
        this.connection = connection;
        config.setConnectionConfig(connection.config());   // what it was accepted with, read back as the option
        this.active = true;
        this.local = connection.localAddress();
        this.remote = connection.remoteAddress();
        this.stream = new ByteStream(acceptedBy.rdma, connection, events,
                acceptedBy.eventLoops[connection.ioIndex()]);
        stream.start();
    }

    JrdmaEventLoopGroup.Shared acceptedBy() {
        return acceptedBy;
    }

    Connection connection() {
        return connection;
    }

    /** The stream, once connected (null before); on the event loop. */
    ByteStream stream() {
        return stream;
    }

    @Override
    public ServerSocketChannel parent() {
        return (ServerSocketChannel) super.parent();
    }

    @Override
    public JrdmaSocketChannelConfig config() {
        return config;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && active;
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
        if (goneBeforeRegistered) {
            // After registration and channelActive, which this task follows.
            eventLoop().execute(() -> handleGone(goneCause));
        } else if (stream != null && stream.inputEnded()) {
            // The peer's output ended before the channel was registered (an accepted channel's
            // stream starts in its constructor, with what came first): told now, read or not.
            eventLoop().execute(events::readable);
        }
    }

    @Override
    protected void doDeregister() {
        ((JrdmaEventLoop) eventLoop()).remove(this);
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new JrdmaUnsafe();
    }

    // ------------------------------------------------------------------ connect

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("a jrdma client channel does not bind: the connection manager picks the "
                + "local address (bind a JrdmaServerChannel to listen)");
    }

    private final class JrdmaUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            if (promise.isDone() || !ensureOpen(promise)) {
                return;
            }
            try {
                if (connection != null) {
                    throw new AlreadyConnectedException();
                }
                if (connectPromise != null) {
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
                ConnectionConfig cc = config.getConnectionConfig();
                CompletableFuture<Connection> f = loop.shared().rdma.connectAsync(r, cc, loop.ioLoop());
                connectPromise = promise;
                int timeoutMillis = config.getConnectTimeoutMillis();
                if (timeoutMillis > 0) {
                    connectTimeout = loop.schedule(() -> {
                        ChannelPromise p = connectPromise;
                        if (p != null && !p.isDone() && p.tryFailure(new ConnectTimeoutException(
                                "connection timed out after " + timeoutMillis + " ms: " + r))) {
                            close(voidPromise());
                        }
                    }, timeoutMillis, TimeUnit.MILLISECONDS);
                }
                promise.addListener((ChannelFutureListener) future -> {
                    if (future.isCancelled()) {
                        cancelConnectTimeout();
                        connectPromise = null;
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

        private void finishConnect(Connection c, Throwable e) {
            ChannelPromise promise = connectPromise;
            cancelConnectTimeout();
            connectPromise = null;
            if (promise == null || promise.isDone() || !open) {
                if (c != null) {
                    c.close();   // given up on (timed out, cancelled, closed): nobody takes it
                }
                return;
            }
            if (e != null) {
                Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
                promise.tryFailure(connectFailure(cause));
                close(voidPromise());
                return;
            }
            try {
                connection = c;
                stream = new ByteStream(((JrdmaEventLoop) eventLoop()).shared().rdma, c, events, eventLoop());
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
            active = true;
            boolean nowActive = isActive();   // before the promise's listeners run: one may close it (as epoll does)
            boolean promiseSet = promise.trySuccess();
            if (!wasActive && nowActive) {
                pipeline().fireChannelActive();
            }
            if (!promiseSet) {
                close(voidPromise());
                return;
            }
            stream.start();   // after channelActive: what came already is read, an end already seen is told
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

        /** Flushes again once the stream has room (credits, slots, send queue). */
        void resumeFlush() {
            flush0();
        }

        /** The connection was reset under flushed writes: they fail as a socket write would (close, or shut the output). */
        void writesFailed(IOException cause) {
            handleWriteError(cause);
        }
    }

    private void cancelConnectTimeout() {
        Future<?> t = connectTimeout;
        connectTimeout = null;
        if (t != null) {
            t.cancel(false);
        }
    }

    // ------------------------------------------------------------------ write

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf) {
            return msg;
        }
        if (msg instanceof FileRegion) {
            throw new UnsupportedOperationException("a jrdma channel cannot send a FileRegion (no file descriptor goes over "
                    + "RDMA): read the file into a ByteBuf");
        }
        throw new UnsupportedOperationException("unsupported message type: " + StringUtil.simpleClassName(msg)
                + " (a jrdma channel sends ByteBufs)");
    }

    /**
     * The smallest write sent from the buffer's own registered memory: smaller ones are copied,
     * so that small writes coalesce into one message (each message takes one of the peer's
     * receive buffers) and a copy of a few hundred bytes costs less than a message of its own.
     * A larger one that fits in what is left of the send slot being filled is copied too: sent
     * from its memory it would end that slot's message early (an HTTP/2 frame's 9-byte header
     * would go as a message of its own before each frame's data).
     */
    static final int ZERO_COPY_MIN = 4096;
    /** Bytes written from their own registered memory (on the event loop; for tests). */
    private long sentWithoutCopy;

    /** {@return the bytes this channel sent from their buffers' registered memory, not copied; on the event loop} */
    long bytesSentWithoutCopy() {
        return sentWithoutCopy;
    }

    /**
     * Writes what is flushed: bytes are copied into the stream's send slots and the write is done
     * (as a socket write is once the kernel has its bytes). Not when the messages complete: with
     * the software providers a send completes when the peer's IO loop has acknowledged it, so a
     * peer loop that blocks would hold this side's writes (RDMA hardware acknowledges without the
     * peer's CPU; emulated RC cannot). A buffer of {@value #ZERO_COPY_MIN} bytes or more from the
     * group's {@link JrdmaByteBufAllocator} is sent where it is, not copied: the channel holds a
     * reference to it until its messages completed.
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        ByteStream s = stream;
        if (s == null) {
            throw new NotYetConnectedException();
        }
        if (s.outputClosed() || s.peerClosed()) {
            throw new IOException(outputShutdown ? "the output was shut down" : s.peerClosed()
                    ? "Connection reset by peer: the peer at " + remote + " closed" : "Connection reset by peer: the jrdma connection to "
                    + remote + " is gone");
        }
        for (;;) {
            Object msg = in.current();
            if (msg == null) {
                break;
            }
            ByteBuf buf = (ByteBuf) msg;
            int readable = buf.readableBytes();
            if (readable == 0) {
                in.remove();
                continue;
            }
            int taken = -1;
            if (readable >= ZERO_COPY_MIN && readable > s.roomInSlotBeingFilled()) {
                RegisteredByteBuf.RegisteredSpan span = RegisteredByteBuf.regionOf(buf, buf.readerIndex(), readable, s.rdma());
                if (span != null) {
                    taken = s.writeRegistered(buf, buf.readerIndex(), readable, span.region(), span.offset());
                    sentWithoutCopy += taken;
                }
            }
            if (taken < 0) {
                taken = s.write(buf, buf.readerIndex(), readable);
            }
            if (taken == 0) {
                break;   // no room: the stream calls writable() when there is
            }
            in.removeBytes(taken);
            if (taken < readable) {
                break;
            }
        }
        s.flush();
    }

    // ------------------------------------------------------------------ read

    @Override
    protected void doBeginRead() {
        readPending = true;
        if (inRead) {
            return;   // asked from inside a read loop (channelReadComplete, or a handler): it looks again when it ends
        }
        if (readable()) {
            scheduleRead();
        }
    }

    /** Queues a read round unless one is queued already (on the loop). */
    private void scheduleRead() {
        if (!readScheduled) {
            readScheduled = true;
            eventLoop().execute(readTask);
        }
    }

    /** Whether a read round has something to do: bytes queued, or the end of input not yet told in full. */
    private boolean readable() {
        ByteStream s = stream;
        return s != null && (s.hasInbound() || (s.inputEnded() && !inputShutdownReadCompleteFired));
    }

    private void readInbound() {
        ByteStream s = stream;
        if (s == null || !isOpen() || (inputShutdown && (inputShutdownReadCompleteFired || !config.isAllowHalfClosure()))) {
            return;
        }
        ChannelPipeline pipeline = pipeline();
        RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
        handle.reset(config);
        inRead = true;
        try {
            do {
                ByteBuf buf = s.read(handle.guess());
                if (buf == null) {
                    break;
                }
                readPending = false;
                int n = buf.readableBytes();
                // Netty's handles read on while the last read filled what was attempted ("maybe
                // more data"): say so exactly when more is queued.
                handle.attemptedBytesRead(s.hasInbound() ? n : n + 1);
                handle.lastBytesRead(n);
                handle.incMessagesRead(1);
                pipeline.fireChannelRead(buf);
                if (!isOpen() || inputShutdown) {
                    break;
                }
            } while (handle.continueReading());
            handle.readComplete();
            pipeline.fireChannelReadComplete();
        } finally {
            inRead = false;
        }
        if (stream == s) {
            s.returnCredits();
        }
        if (resetCause != null && !s.hasInbound()) {
            tellReset();
        } else if (isOpen() && s.inputEnded()) {
            readPending = false;
            shutdownInput(false);
        } else if (readPending && isOpen() && s.hasInbound()) {
            scheduleRead();   // a read asked during this round, with bytes left: the next round
        }
    }

    /** The reset, once every byte that came before it was read: a read error, then the input ends. */
    private void tellReset() {
        IOException cause = resetCause;
        if (cause == null || !open) {
            return;
        }
        resetCause = null;
        pipeline().fireExceptionCaught(cause);
        if (open) {
            if (config.isAllowHalfClosure() && !inputShutdown) {
                inputShutdown = true;
                inputShutdownReadCompleteFired = true;   // nothing more to read: no second round
                pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
            } else {
                unsafe().close(unsafe().voidPromise());
            }
        }
    }

    /** The peer's output ended and every byte before it was read: as epoll's shutdownInput(false). */
    private void shutdownInput(boolean local) {
        if (!inputShutdown) {
            if (config.isAllowHalfClosure()) {
                inputShutdown = true;
                pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                // The end of input stays "readable", as a socket's EOF does for epoll: one more read
                // round finds nothing and tells ChannelInputShutdownReadComplete, reading or not.
                if (isOpen()) {
                    scheduleRead();
                }
            } else {
                unsafe().close(unsafe().voidPromise());
            }
        } else if (!local && !inputShutdownReadCompleteFired) {
            inputShutdownReadCompleteFired = true;
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        }
    }

    /** What the stream says, on the event loop. */
    private final class StreamEvents implements ByteStream.Listener {
        @Override
        public void readable() {
            // Data goes to a read that waits for it; the end of input is told reading or not (as epoll's EOF).
            // Not before registration: the pipeline has no loop yet (doRegister looks again).
            if (!inRead && !readScheduled && isActive() && isRegistered() && (readPending || stream.inputEnded())) {
                readInbound();   // (a queued round reads it, in order, when one is queued)
            }
        }

        @Override
        public void writable() {
            if (isActive()) {
                ((JrdmaUnsafe) unsafe()).resumeFlush();
            }
        }


        @Override
        public void gone(IOException cause) {
            if (!isRegistered()) {
                goneBeforeRegistered = true;
                goneCause = cause;
                return;
            }
            handleGone(cause);
        }

        @Override
        public ByteBufAllocator allocator() {
            return config.getAllocator();
        }
    }

    /** The connection ended: a reset or error goes to the pipeline and closes; a peer's close ends the input. */
    private void handleGone(IOException cause) {
        if (!open) {
            return;
        }
        if (cause != null) {
            // As a socket reset under a channel: flushed writes fail now (closing, or shutting the
            // output when AUTO_CLOSE is off); what arrived before the reset is still read, and the
            // reset is told after it, as a read error.
            resetCause = cause;
            ChannelOutboundBuffer in = unsafe().outboundBuffer();
            if (in != null && !in.isEmpty()) {
                ((JrdmaUnsafe) unsafe()).writesFailed(cause);
            }
            if (open && !stream.hasInbound()) {
                tellReset();
            } else if (open && readPending && !inRead && !readScheduled) {
                readInbound();
            }
            return;
        }
        // The peer closed: what it sent before is queued; the reads that follow end with the end of input.
        if (!inRead && !readScheduled && (readPending || stream.inputEnded())) {
            readInbound();
        }
        if (open && !config.isAllowHalfClosure() && !stream.hasInbound()) {
            unsafe().close(unsafe().voidPromise());
        }
    }

    // ------------------------------------------------------------------ shutdown and close

    @Override
    public boolean isInputShutdown() {
        return inputShutdown || !isActive();
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public boolean isShutdown() {
        return isInputShutdown() && isOutputShutdown();
    }

    @Override
    public ChannelFuture shutdownOutput() {
        return shutdownOutput(newPromise());
    }

    @Override
    public ChannelFuture shutdownOutput(ChannelPromise promise) {
        EventLoop loop = eventLoop();
        if (loop.inEventLoop()) {
            ((AbstractUnsafe) unsafe()).shutdownOutput(promise);
        } else {
            loop.execute(() -> ((AbstractUnsafe) unsafe()).shutdownOutput(promise));
        }
        return promise;
    }

    @Override
    protected void doShutdownOutput() throws Exception {
        ByteStream s = stream;
        if (s == null) {
            throw new NotYetConnectedException();
        }
        outputShutdown = true;
        s.shutdownOutput();
    }

    @Override
    public ChannelFuture shutdownInput() {
        return shutdownInput(newPromise());
    }

    @Override
    public ChannelFuture shutdownInput(ChannelPromise promise) {
        EventLoop loop = eventLoop();
        if (loop.inEventLoop()) {
            shutdownInput0(promise);
        } else {
            loop.execute(() -> shutdownInput0(promise));
        }
        return promise;
    }

    private void shutdownInput0(ChannelPromise promise) {
        ByteStream s = stream;
        if (s == null) {
            promise.setFailure(new NotYetConnectedException());
            return;
        }
        if (!isOpen()) {
            promise.setFailure(new ClosedChannelException());   // as a closed socket's shutdown fails
            return;
        }
        if (!inputShutdown) {
            inputShutdown = true;
            s.discardInput();
        }
        promise.setSuccess();
    }

    @Override
    public ChannelFuture shutdown() {
        return shutdown(newPromise());
    }

    @Override
    public ChannelFuture shutdown(ChannelPromise promise) {
        ChannelFuture output = shutdownOutput();
        if (output.isDone()) {
            shutdownInputAfter(output, promise);
        } else {
            output.addListener((ChannelFutureListener) f -> shutdownInputAfter(f, promise));
        }
        return promise;
    }

    private void shutdownInputAfter(ChannelFuture output, ChannelPromise promise) {
        ChannelFuture input = shutdownInput();
        input.addListener((ChannelFutureListener) f -> {
            Throwable a = output.cause();
            Throwable b = f.cause();
            if (a != null) {
                if (b != null) {
                    a.addSuppressed(b);
                }
                promise.setFailure(a);
            } else if (b != null) {
                promise.setFailure(b);
            } else {
                promise.setSuccess();
            }
        });
    }

    @Override
    protected void doDisconnect() throws Exception {
        doClose();
    }

    @Override
    protected void doClose() throws Exception {
        boolean wasOpen = open;
        open = false;
        active = false;
        ChannelPromise p = connectPromise;
        if (p != null) {
            connectPromise = null;
            p.tryFailure(new ClosedChannelException());
        }
        cancelConnectTimeout();
        ByteStream s = stream;
        if (s == null || !wasOpen) {
            return;
        }
        // Not registered (an accepted channel closed before it was, by closeForcibly): the stream
        // is its connection's loop's, and nothing lingers without a loop of its own.
        boolean registered = isRegistered();
        boolean abortive = config.getSoLinger() == 0 || !registered;
        EventLoop home = registered ? eventLoop() : acceptedBy.eventLoops[connection.ioIndex()];
        int lingerSeconds = Math.max(1, config.lingerSeconds());
        Runnable close = () -> {
            s.release();
            if (s.close(abortive)) {
                // Graceful: the connection ends when the peer's CLOSE comes, or after the linger time.
                home.schedule(s::lingerExpired, lingerSeconds, TimeUnit.SECONDS);
            }
        };
        if (home.inEventLoop()) {
            close.run();
        } else {
            home.execute(close);
        }
    }

}
