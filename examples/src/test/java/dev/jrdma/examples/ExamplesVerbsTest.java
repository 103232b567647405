package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.ConnectionConfig;
import dev.jrdma.FlushType;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.examples.echo.EchoClient;
import dev.jrdma.examples.echo.EchoServer;
import dev.jrdma.examples.flush.WriteFlushReadClient;
import dev.jrdma.examples.flush.WriteFlushReadServer;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The examples run as a user would run them, server and client on the two Soft-RoCE devices. */
@Tag("verbs")
class ExamplesVerbsTest {
    private static String env(String name) {
        String v = System.getenv(name);
        assertTrue(v != null && !v.isBlank(), name + " is set by scripts/softroce-vm: run with scripts/verbs-suite");
        return v;
    }

    private static final int PORT = 7600 + (int) (ProcessHandle.current().pid() % 200);

    @Test
    void echoServerAndClientWithCallbacks() throws Exception {
        try (Rdma server = Rdma.builder().device(env("JRDMA_VM_DEV0")).build();
             Rdma client = Rdma.builder().device(env("JRDMA_VM_DEV1")).build();
             RdmaServer s = EchoServer.start(server, new InetSocketAddress(env("JRDMA_VM_IP0"), PORT), ConnectionConfig.defaults())) {
            EchoClient.Result r = EchoClient.run(client, s.address(), 200, 100);
            assertEquals(200, r.messages());
            assertTrue(r.averageRoundTripMicros() > 0);
            // A second client on the same server, larger messages.
            assertEquals(50, EchoClient.run(client, s.address(), 50, 4000).messages());
        }
    }

    @Test
    void writeFlushReadBackVisibleAndPersistent() {
        try (Rdma server = Rdma.builder().device(env("JRDMA_VM_DEV0")).build();
             Rdma client = Rdma.builder().device(env("JRDMA_VM_DEV1")).build()) {
            LocalRegion region = server.allocate(4096);
            try (RdmaServer s = WriteFlushReadServer.start(server, new InetSocketAddress(env("JRDMA_VM_IP0"), PORT + 1), region)) {
                WriteFlushReadClient.Result r = WriteFlushReadClient.run(client, s.address(), "first, visible");
                assertEquals(new WriteFlushReadClient.Result(FlushType.VISIBILITY, "first, visible"), r);
                assertEquals("first, visible", new String(region.segment().asSlice(0, 14).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                        StandardCharsets.UTF_8));
            }
            region.declareDirectWriteToPmem();
            try (RdmaServer s = WriteFlushReadServer.start(server, new InetSocketAddress(env("JRDMA_VM_IP0"), PORT + 2), region)) {
                assertEquals(new WriteFlushReadClient.Result(FlushType.PERSISTENT, "then persistent"),
                        WriteFlushReadClient.run(client, s.address(), "then persistent"));
            }
        }
    }
}
