package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * A stream peer written by hand on jrdma's plain API, with no channel code: it speaks
 * {@link StreamMessage}'s wire format directly, as Netty's "by peer" tests use a plain
 * {@code java.net.Socket} against the transport under test.
 */
final class RawStreamPeer implements AutoCloseable {
    private final Rdma rdma = Rdma.builder().provider(JrdmaSocketTestPermutation.PROVIDER).build();
    private Connection connection;
    private LocalRegion buf;

    void connect(SocketAddress address) {
        connection = rdma.connect((InetSocketAddress) address, JrdmaSocketChannelConfig.DEFAULT_CONNECTION_CONFIG);
        buf = rdma.allocate(1);
    }

    /** One byte of DATA (no credits given back: this peer reads nothing). */
    void write(int data) {
        buf.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) data);
        connection.sendWithImmSync(StreamMessage.imm(StreamMessage.DATA, 0), buf);
    }

    void shutdownOutput() {
        connection.sendWithImmSync(StreamMessage.imm(StreamMessage.SHUTDOWN_OUTPUT, 0), buf.slice(0, 0));
    }

    @Override
    public void close() {
        if (connection != null) {
            connection.close();
        }
        rdma.close();
    }
}
