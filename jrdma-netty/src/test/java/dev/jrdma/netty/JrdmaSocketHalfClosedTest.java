package dev.jrdma.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketHalfClosedTest;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link SocketHalfClosedTest} on jrdma channels. */
class JrdmaSocketHalfClosedTest extends SocketHalfClosedTest {
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

    /**
     * Its leader blocks its event loop while the follower closes abortively, then expects its
     * next write to fail at once, as a socket write fails once the kernel has the peer's RST. A
     * jrdma write is done when its bytes are posted, and the peer's reset is known only once the
     * writer's loop polls its connection again (and with emulated RC, a send's completion needs the
     * peer's loop): the write fails later, at its completion. See the module's README.
     */
    @Override
    @Test
    @Disabled("a write after the peer's abortive close fails at its completion, not at the write: see the README")
    public void testAutoCloseFalseDoesShutdownOutput(TestInfo testInfo) {
    }
}
