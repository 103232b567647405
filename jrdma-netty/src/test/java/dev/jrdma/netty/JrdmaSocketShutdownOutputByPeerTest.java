package dev.jrdma.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.AbstractSocketShutdownOutputByPeerTest;

import java.net.SocketAddress;
import java.util.List;

/**
 * Netty's {@code SocketShutdownOutputByPeerTest} on jrdma channels: its peer is a plain socket,
 * here a {@link RawStreamPeer} (Netty's epoll transport does the same with its own socket type
 * for domain sockets).
 */
class JrdmaSocketShutdownOutputByPeerTest extends AbstractSocketShutdownOutputByPeerTest<RawStreamPeer> {
    @Override
    protected List<BootstrapFactory<ServerBootstrap>> newFactories() {
        return JrdmaSocketTestPermutation.INSTANCE.serverSocket();
    }

    @Override
    protected SocketAddress newSocketAddress() {
        return JrdmaSocketTestPermutation.newSocketAddress();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return JrdmaSocketTestPermutation.allocators();
    }

    @Override
    protected void shutdownOutput(RawStreamPeer s) {
        s.shutdownOutput();
    }

    @Override
    protected void connect(RawStreamPeer s, SocketAddress address) {
        s.connect(address);
    }

    @Override
    protected void close(RawStreamPeer s) {
        s.close();
    }

    @Override
    protected void write(RawStreamPeer s, int data) {
        s.write(data);
    }

    @Override
    protected RawStreamPeer newSocket() {
        return new RawStreamPeer();
    }
}
