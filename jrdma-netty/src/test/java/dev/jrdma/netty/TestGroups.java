package dev.jrdma.netty;

import dev.jrdma.Rdma;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The event loop groups a test opened, each shut down (and seen ended) after it. */
final class TestGroups {
    private final List<JrdmaEventLoopGroup> groups = new ArrayList<>();

    /** {@return a group of {@code loops} loops on {@code provider}, shut down by {@link #shutDownAll}} */
    JrdmaEventLoopGroup open(String provider, int loops) {
        JrdmaEventLoopGroup g = new JrdmaEventLoopGroup(loops, null, Rdma.builder().provider(provider));
        groups.add(g);
        return g;
    }

    /** Shuts every group down and asserts each ended within {@code seconds}. */
    void shutDownAll(long seconds) throws InterruptedException {
        for (JrdmaEventLoopGroup g : groups) {
            assertTrue(g.shutdownGracefully(0, 5, TimeUnit.SECONDS).await(seconds, TimeUnit.SECONDS), "the group ended");
        }
        groups.clear();
    }
}
