package dev.jrdma.netty;

import dev.jrdma.ConnectionConfig;
import io.netty.channel.ChannelOption;

/**
 * The options of jrdma's channels beyond Netty's own. On a {@link JrdmaServerChannel} they apply
 * to the connections it accepts (a child option would come too late: a connection is set up
 * before its channel exists).
 *
 * @param <T> the option's value type
 */
public final class JrdmaChannelOption<T> extends ChannelOption<T> {
    /**
     * How connections are set up: receive queue depth and buffer size (the stream's window:
     * depth × size bytes per direction), send queue depth, timeouts, auth token. Default
     * {@link JrdmaSocketChannelConfig#DEFAULT_CONNECTION_CONFIG}. The depth must be at least
     * {@value ByteStream#MIN_DEPTH}.
     */
    public static final ChannelOption<ConnectionConfig> CONNECTION_CONFIG =
            valueOf(JrdmaChannelOption.class, "JRDMA_CONNECTION_CONFIG");

    @SuppressWarnings("deprecation")
    private JrdmaChannelOption() {
        super(null);
    }
}
