package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.RdmaTimeoutException;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A peer that takes the TCP connection and then says nothing (no handshake): the connect fails
 * with an {@link RdmaTimeoutException} naming the address and the time-out, both the future and
 * the blocking form, not with a bare {@code java.util.concurrent.TimeoutException}.
 */
class ConnectTimeoutTest {
    @Test
    void aPeerThatNeverAnswersTheHandshakeTimesTheConnectOutWithTheReason() throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().timeout(Duration.ofMillis(300)).build();
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
             Rdma rdma = Rdma.builder().provider("tcp").build()) {
            InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), silent.getLocalPort());
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> rdma.connectAsync(at, config).get(30, TimeUnit.SECONDS));
            RdmaTimeoutException t = assertInstanceOf(RdmaTimeoutException.class, e.getCause());
            assertTrue(t.getMessage().contains(at.toString()) && t.getMessage().contains("PT0.3S"), t.getMessage());
            RdmaTimeoutException sync = assertThrows(RdmaTimeoutException.class, () -> rdma.connect(at, config));
            assertTrue(sync.getMessage().contains("did not complete within"), sync.getMessage());
        }
    }
}
