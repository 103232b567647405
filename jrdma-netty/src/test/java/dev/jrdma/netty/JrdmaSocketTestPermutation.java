package dev.jrdma.netty;

import dev.jrdma.Rdma;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketTestPermutation;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;

/**
 * Netty's transport test suite on jrdma channels, as {@code EpollSocketTestPermutation} puts it on
 * epoll's: jrdma servers and clients only (an RDMA peer cannot be a NIO socket). The provider is
 * {@link #PROVIDER}: the build runs the suite once on tcp and once on shm, and the Soft-RoCE VM on
 * verbs.
 */
final class JrdmaSocketTestPermutation extends SocketTestPermutation {
    /** {@code -Djrdma.netty.provider}: tcp, shm (default) or verbs. */
    static final String PROVIDER = System.getProperty("jrdma.netty.provider", "shm");

    /**
     * {@code -Djrdma.netty.host}: the address servers listen on (port 0) and clients connect to;
     * default loopback. On verbs an address of an RDMA device (in the Soft-RoCE VM, rxe0's).
     */
    static final String HOST = System.getProperty("jrdma.netty.host", "127.0.0.1");

    static final JrdmaSocketTestPermutation INSTANCE = new JrdmaSocketTestPermutation();

    /** One group for parents and children: an accepted connection is served by the loops of the group that accepted it. */
    static final EventLoopGroup GROUP = new JrdmaEventLoopGroup(NUM_THREADS,
            new DefaultThreadFactory("testsuite-jrdma-" + PROVIDER, true), Rdma.builder().provider(PROVIDER));

    /**
     * The allocators every test runs with (the suite's own list but Netty's adaptive allocator,
     * whose buffers are direct ones as the pooled allocator's are): Netty's unpooled and pooled
     * ones, and the group's {@link JrdmaByteBufAllocator}, whose direct buffers of 4 KiB or more a
     * channel sends without a copy (an echo server echoes what it read into them).
     */
    static List<ByteBufAllocator> allocators() {
        return List.of(UnpooledByteBufAllocator.DEFAULT, PooledByteBufAllocator.DEFAULT, ((JrdmaEventLoopGroup) GROUP).allocator());
    }

    /** Where the suite's servers listen: {@link #HOST}, any free port. */
    static SocketAddress newSocketAddress() {
        return new InetSocketAddress(HOST, 0);
    }

    @Override
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socket() {
        return combo(serverSocket(), clientSocket());
    }

    @Override
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socketWithFastOpen() {
        return socket();
    }

    @Override
    public List<BootstrapFactory<ServerBootstrap>> serverSocket() {
        return List.of(() -> new ServerBootstrap().group(GROUP).channel(JrdmaServerChannel.class));
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> clientSocket() {
        return List.of(() -> new Bootstrap().group(GROUP).channel(JrdmaSocketChannel.class));
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> clientSocketWithFastOpen() {
        return clientSocket();
    }
}
