package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.FileRegion;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.internal.StringUtil;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;
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
 *
 * <p>This class is the stream over the connection, as Netty's {@code AbstractEpollStreamChannel}
 * is over a socket: reads, writes, half-closure, the connection's end and the stream's close. The
 * connect, registration and the open/active state are {@link AbstractJrdmaChannel}'s; how far the
 * input has ended is part of that one {@link ChannelState}. What stays beside it, and why it is no
 * state of the enum:
 * <ul>
 * <li>{@code outputShutdown}: the output's end is independent of the input's (either may end
 * first, or both), and nothing of the read path looks at it: in the enum it would double the
 * three active states.
 * <li>{@code readPending}, {@code inRead}, {@code readScheduled}: the read loop's bookkeeping, as
 * epoll's channels keep theirs (a read asked, a round running, a round queued); a read may be
 * asked while a round runs or waits, so they are not one state, and none of them is the channel's.
 * <li>{@code goneUntilRegistered}: a notification held back, not a state.
 * </ul>
 *
 * <p>Threads: everything here runs on the channel's event loop, which is the connection's IO loop
 * (the stream's callbacks too), except what {@code Channel} lets any thread call: the
 * {@code shutdown*} methods hand themselves to the loop, and {@code isOutputShutdown} reads the
 * volatile {@code outputShutdown}. An accepted channel's constructor runs on its connection's IO
 * loop, where its stream starts.
 */
public final class JrdmaSocketChannel extends AbstractJrdmaChannel implements SocketChannel {
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private final JrdmaSocketChannelConfig config;
    private ByteStream stream;
    /** Set on the event loop, read from any thread (isOutputShutdown). */
    private volatile boolean outputShutdown;
    /** A read was asked (doBeginRead) and neither bytes nor the end of input went to the pipeline since. */
    private boolean readPending;
    /** A read round is running: a read asked inside it is looked at when it ends. */
    private boolean inRead;
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
    /** The connection ended before an accepted channel was registered: told once it is (null: it did not). */
    private Runnable goneUntilRegistered;

    /** A client channel: it connects with {@code connect(address)}. */
    public JrdmaSocketChannel() {
        this.config = new JrdmaSocketChannelConfig(this);
    }

    /** An accepted channel, on its connection's IO loop: the stream starts now, so nothing that arrives is lost. */
    JrdmaSocketChannel(JrdmaServerChannel parent, Connection connection, JrdmaEventLoopGroup.Shared acceptedBy) {
        super(parent, connection, acceptedBy);
        this.config = new JrdmaSocketChannelConfig(this);
        config.setConnectionConfig(connection.config());   // what it was accepted with, read back as the option
        this.stream = new ByteStream(acceptedBy.rdma, connection, events,
                acceptedBy.eventLoops[connection.ioIndex()]);
        stream.start();
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
    protected AbstractUnsafe newUnsafe() {
        return new JrdmaUnsafe();
    }

    // ------------------------------------------------------------------ connect and registration

    @Override
    ConnectionConfig connectionConfig() {
        return config.getConnectionConfig();
    }

    @Override
    void connectionMade(Connection c) {
        stream = new ByteStream(((JrdmaEventLoop) eventLoop()).shared().rdma, c, events, eventLoop());
    }

    @Override
    void connectionActive() {
        stream.start();
    }

    @Override
    void onRegistered() {
        Runnable gone = goneUntilRegistered;
        if (gone != null) {
            // After registration and channelActive, which this task follows.
            eventLoop().execute(gone);
        } else if (stream != null && stream.inputEnded()) {
            // The peer's output ended before the channel was registered (an accepted channel's
            // stream starts in its constructor, with what came first): told now, read or not.
            eventLoop().execute(events::readable);
        }
    }

    private final class JrdmaUnsafe extends AbstractJrdmaUnsafe {
        /** Flushes again once the stream has room (credits, slots, send queue). */
        void resumeFlush() {
            flush0();
        }

        /** The connection was reset under flushed writes: they fail as a socket write would (close, or shut the output). */
        void writesFailed(IOException cause) {
            handleWriteError(cause);
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
                    ? "Connection reset by peer: the peer at " + remoteAddress0() + " closed"
                    : "Connection reset by peer: the jrdma connection to " + remoteAddress0() + " is gone");
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
        return s != null && (s.hasInbound() || (s.inputEnded() && state() != ChannelState.INPUT_SHUTDOWN_READ_COMPLETE));
    }

    private void readInbound() {
        ByteStream s = stream;
        ChannelState state = state();
        if (s == null || !state.isOpen() || state == ChannelState.INPUT_SHUTDOWN_READ_COMPLETE
                || (state == ChannelState.INPUT_SHUTDOWN && !config.isAllowHalfClosure())) {
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
                if (state() != ChannelState.ACTIVE) {
                    break;   // closed, or the input shut by a handler
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
        if (cause == null || !isOpen()) {
            return;
        }
        resetCause = null;
        pipeline().fireExceptionCaught(cause);
        if (isOpen()) {
            if (config.isAllowHalfClosure() && state() == ChannelState.ACTIVE) {
                setInputState(ChannelState.INPUT_SHUTDOWN_READ_COMPLETE);   // nothing more to read: no second round
                pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
            } else {
                unsafe().close(unsafe().voidPromise());
            }
        }
    }

    /** The peer's output ended and every byte before it was read: as epoll's shutdownInput(false). */
    private void shutdownInput(boolean local) {
        if (state() == ChannelState.ACTIVE) {
            if (config.isAllowHalfClosure()) {
                setInputState(ChannelState.INPUT_SHUTDOWN);
                pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                // The end of input stays "readable", as a socket's EOF does for epoll: one more read
                // round finds nothing and tells ChannelInputShutdownReadComplete, reading or not.
                if (isOpen()) {
                    scheduleRead();
                }
            } else {
                unsafe().close(unsafe().voidPromise());
            }
        } else if (!local && state() == ChannelState.INPUT_SHUTDOWN) {
            setInputState(ChannelState.INPUT_SHUTDOWN_READ_COMPLETE);
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        }
    }

    /** What the stream says, on the event loop. */
    private final class StreamEvents implements ByteStream.Listener {
        @Override
        public void readable() {
            // Data goes to a read that waits for it; the end of input is told reading or not (as epoll's EOF).
            // Not before registration: the pipeline has no loop yet (onRegistered looks again).
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
                goneUntilRegistered = () -> handleGone(cause);
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
        if (!isOpen()) {
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
            if (isOpen() && !stream.hasInbound()) {
                tellReset();
            } else if (isOpen() && readPending && !inRead && !readScheduled) {
                readInbound();
            }
            return;
        }
        // The peer closed: what it sent before is queued; the reads that follow end with the end of input.
        if (!inRead && !readScheduled && (readPending || stream.inputEnded())) {
            readInbound();
        }
        if (isOpen() && !config.isAllowHalfClosure() && !stream.hasInbound()) {
            unsafe().close(unsafe().voidPromise());
        }
    }

    // ------------------------------------------------------------------ shutdown and close

    @Override
    public boolean isInputShutdown() {
        return state().isInputShutdown();
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
        if (state() == ChannelState.ACTIVE) {
            setInputState(ChannelState.INPUT_SHUTDOWN);
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

    /** Ends the stream: gracefully, lingering for the peer's CLOSE up to SO_LINGER, or abortively (SO_LINGER 0). */
    @Override
    void closeConnection() {
        ByteStream s = stream;
        if (s == null) {
            return;
        }
        // Not registered (an accepted channel closed before it was, by closeForcibly): the stream
        // is its connection's loop's, and nothing lingers without a loop of its own.
        boolean registered = isRegistered();
        boolean abortive = config.getSoLinger() == 0 || !registered;
        EventLoop home = registered ? eventLoop() : acceptedBy().eventLoops[connection().ioIndex()];
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
