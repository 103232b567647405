package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.RdmaServer;
import io.netty.channel.AbstractServerChannel;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoop;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ServerSocketChannel;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.ArrayDeque;

/**
 * A listening jrdma channel, used as Netty's server socket channels are:
 * {@code new ServerBootstrap().group(group).channel(JrdmaServerChannel.class)}. Each connection
 * jrdma accepts becomes a {@link JrdmaSocketChannel} read from this channel (as an accepted
 * socket is), which the group registers on the loop that serves the connection: give the
 * bootstrap the same {@link JrdmaEventLoopGroup} as parent and child group.
 *
 * <p>The connections it accepts are set up with its {@link JrdmaChannelOption#CONNECTION_CONFIG}.
 */
public final class JrdmaServerChannel extends AbstractServerChannel implements ServerSocketChannel {
    private final JrdmaServerChannelConfig config = new JrdmaServerChannelConfig(this);
    /** Accepted channels not yet read; on this channel's loop. */
    private final ArrayDeque<JrdmaSocketChannel> accepted = new ArrayDeque<>();
    private volatile RdmaServer server;
    private volatile InetSocketAddress local;
    private volatile boolean open = true;
    private boolean acceptPending;

    /** A server channel: it listens once bound. */
    public JrdmaServerChannel() {
    }

    @Override
    public JrdmaServerChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && server != null;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return loop instanceof JrdmaEventLoop;
    }

    @Override
    protected void doRegister() {
        ((JrdmaEventLoop) eventLoop()).add(this);
    }

    @Override
    protected void doDeregister() {
        ((JrdmaEventLoop) eventLoop()).remove(this);
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        if (!(localAddress instanceof InetSocketAddress address)) {
            throw new UnsupportedAddressTypeException();
        }
        JrdmaEventLoop loop = (JrdmaEventLoop) eventLoop();
        JrdmaEventLoopGroup.Shared shared = loop.shared();
        RdmaServer s = shared.rdma.listen(address, config.getConnectionConfig(), c -> accept(c, shared));
        local = s.address();
        server = s;
    }

    /** On the accepted connection's loop: its channel starts there (nothing it receives is lost), then is queued here. */
    private void accept(Connection c, JrdmaEventLoopGroup.Shared shared) {
        JrdmaSocketChannel child;
        try {
            child = new JrdmaSocketChannel(this, c, shared);
        } catch (RuntimeException e) {
            JrdmaEventLoopGroup.LOG.warn("refused a connection from {}: {}", c.remoteAddress(), e.getMessage());
            c.close();
            return;
        }
        EventLoop loop = eventLoop();
        if (loop.inEventLoop()) {
            queue(child);
        } else {
            loop.execute(() -> queue(child));
        }
    }

    private void queue(JrdmaSocketChannel child) {
        if (!open) {
            child.unsafe().closeForcibly();
            return;
        }
        accepted.add(child);
        if (acceptPending) {
            acceptPending = false;
            readAccepted();
        }
    }

    @Override
    protected void doBeginRead() {
        if (!accepted.isEmpty()) {
            readAccepted();
        } else {
            acceptPending = true;
        }
    }

    private void readAccepted() {
        RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
        handle.reset(config);
        ChannelPipeline pipeline = pipeline();
        JrdmaSocketChannel child;
        do {
            child = accepted.poll();
            if (child == null) {
                break;
            }
            handle.incMessagesRead(1);
            pipeline.fireChannelRead(child);
        } while (handle.continueReading());
        handle.readComplete();
        pipeline.fireChannelReadComplete();
    }

    @Override
    protected void doClose() {
        open = false;
        RdmaServer s = server;
        server = null;
        if (s != null) {
            s.close();
        }
        JrdmaSocketChannel child;
        while ((child = accepted.poll()) != null) {
            child.unsafe().closeForcibly();
        }
    }
}
