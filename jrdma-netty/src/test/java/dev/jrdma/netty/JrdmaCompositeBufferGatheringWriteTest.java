package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.CompositeBufferGatheringWriteTest;

import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link CompositeBufferGatheringWriteTest} on jrdma channels. */
class JrdmaCompositeBufferGatheringWriteTest extends CompositeBufferGatheringWriteTest {
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
