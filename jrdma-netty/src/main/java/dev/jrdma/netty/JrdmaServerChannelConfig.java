package dev.jrdma.netty;

import dev.jrdma.ConnectionConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ServerChannelRecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ServerSocketChannelConfig;

import java.util.Map;

/**
 * The options of a {@link JrdmaServerChannel}: Netty's generic ones, and
 * {@link JrdmaChannelOption#CONNECTION_CONFIG} for the connections it accepts. SO_BACKLOG,
 * SO_REUSEADDR and SO_RCVBUF are kept and read back and change nothing (jrdma bounds pending
 * handshakes and connections itself: {@code Rdma.Builder.maxPendingHandshakes}, {@code maxConnections}).
 */
public final class JrdmaServerChannelConfig extends DefaultChannelConfig implements ServerSocketChannelConfig {
    private volatile ConnectionConfig connectionConfig = JrdmaSocketChannelConfig.DEFAULT_CONNECTION_CONFIG;
    private volatile int backlog = 128;
    private volatile boolean reuseAddress = true;
    private volatile int receiveBufferSize = 64 * 1024;

    JrdmaServerChannelConfig(JrdmaServerChannel channel) {
        super(channel, new ServerChannelRecvByteBufAllocator());
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), ChannelOption.SO_BACKLOG, ChannelOption.SO_REUSEADDR, ChannelOption.SO_RCVBUF,
                JrdmaChannelOption.CONNECTION_CONFIG);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == ChannelOption.SO_BACKLOG) {
            return (T) Integer.valueOf(getBacklog());
        }
        if (option == ChannelOption.SO_REUSEADDR) {
            return (T) Boolean.valueOf(isReuseAddress());
        }
        if (option == ChannelOption.SO_RCVBUF) {
            return (T) Integer.valueOf(getReceiveBufferSize());
        }
        if (option == JrdmaChannelOption.CONNECTION_CONFIG) {
            return (T) getConnectionConfig();
        }
        return super.getOption(option);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        if (option == ChannelOption.SO_BACKLOG) {
            setBacklog((Integer) value);
        } else if (option == ChannelOption.SO_REUSEADDR) {
            setReuseAddress((Boolean) value);
        } else if (option == ChannelOption.SO_RCVBUF) {
            setReceiveBufferSize((Integer) value);
        } else if (option == JrdmaChannelOption.CONNECTION_CONFIG) {
            setConnectionConfig((ConnectionConfig) value);
        } else {
            return super.setOption(option, value);
        }
        return true;
    }

    /** {@return how accepted connections are set up} */
    public ConnectionConfig getConnectionConfig() {
        return connectionConfig;
    }

    /**
     * Sets how accepted connections are set up; before the bind (later it changes nothing).
     *
     * @param config the connection config; its receive queue depth at least {@value ByteStream#MIN_DEPTH}
     * @return this config
     */
    public JrdmaServerChannelConfig setConnectionConfig(ConnectionConfig config) {
        this.connectionConfig = ByteStream.checkedConfig(config);
        return this;
    }

    @Override
    public int getBacklog() {
        return backlog;
    }

    @Override
    public JrdmaServerChannelConfig setBacklog(int backlog) {
        if (backlog < 0) {
            throw new IllegalArgumentException("backlog: " + backlog + " (expected: >= 0)");
        }
        this.backlog = backlog;
        return this;
    }

    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    @Override
    public JrdmaServerChannelConfig setReuseAddress(boolean reuseAddress) {
        this.reuseAddress = reuseAddress;
        return this;
    }

    @Override
    public int getReceiveBufferSize() {
        return receiveBufferSize;
    }

    @Override
    public JrdmaServerChannelConfig setReceiveBufferSize(int receiveBufferSize) {
        this.receiveBufferSize = receiveBufferSize;
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setConnectTimeoutMillis(int connectTimeoutMillis) {
        super.setConnectTimeoutMillis(connectTimeoutMillis);
        return this;
    }

    @Override
    @Deprecated
    public JrdmaServerChannelConfig setMaxMessagesPerRead(int maxMessagesPerRead) {
        super.setMaxMessagesPerRead(maxMessagesPerRead);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setWriteSpinCount(int writeSpinCount) {
        super.setWriteSpinCount(writeSpinCount);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    @Deprecated
    public JrdmaServerChannelConfig setWriteBufferHighWaterMark(int writeBufferHighWaterMark) {
        super.setWriteBufferHighWaterMark(writeBufferHighWaterMark);
        return this;
    }

    @Override
    @Deprecated
    public JrdmaServerChannelConfig setWriteBufferLowWaterMark(int writeBufferLowWaterMark) {
        super.setWriteBufferLowWaterMark(writeBufferLowWaterMark);
        return this;
    }

    @Override
    public JrdmaServerChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark writeBufferWaterMark) {
        super.setWriteBufferWaterMark(writeBufferWaterMark);
        return this;
    }
}
