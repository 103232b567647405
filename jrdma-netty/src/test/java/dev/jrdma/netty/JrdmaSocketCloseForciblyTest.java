package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketCloseForciblyTest;

import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link SocketCloseForciblyTest} on jrdma channels. */
class JrdmaSocketCloseForciblyTest extends SocketCloseForciblyTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return JrdmaSocketTestPermutation.INSTANCE.socket();
    }

    @Override
    protected SocketAddress newSocketAddress() {
        return JrdmaSocketTestPermutation.newSocketAddress();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return JrdmaSocketTestPermutation.allocators();
    }
}
