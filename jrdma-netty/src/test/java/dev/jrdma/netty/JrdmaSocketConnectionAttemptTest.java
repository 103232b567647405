package dev.jrdma.netty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.bootstrap.Bootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketConnectionAttemptTest;

import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link SocketConnectionAttemptTest} on jrdma channels. */
class JrdmaSocketConnectionAttemptTest extends SocketConnectionAttemptTest {
    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return JrdmaSocketTestPermutation.INSTANCE.clientSocket();
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
