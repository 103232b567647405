package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * On tcp the target's CPU applies the peer's one-sided operations, so a pass that applied one
 * did work although it completed nothing of its own. It must say so: an IO thread goes on
 * polling after a pass with work, and sleeps (EVENT, ADAPTIVE after its spin) after one
 * without. A pass that applied a WRITE but reported nothing let the IO thread sleep with the
 * WRITE's ACK still held for a frame to ride on; the writer then waited for the sleep's 50 ms
 * limit, and an ADAPTIVE server serving a stream of synchronous writes did so every few writes.
 */
class TcpServedWorkTest {
    private static final long T = 20;

    @Test
    void aPassThatAppliesAPeersWriteIsWorkAndThePassAfterItSendsTheAck() throws Exception {
        try (Rdma server = Rdma.builder().provider("tcp").ioThreads(Rdma.INLINE).build();
             Rdma client = Rdma.builder().provider("tcp").build()) {
            LocalRegion exposed = server.allocate(8);
            AtomicReference<Connection> accepted = new AtomicReference<>();
            RdmaServer listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), accepted::set);
            CompletableFuture<Connection> connecting = client.connectAsync(listener.address(), ConnectionConfig.defaults());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while ((!connecting.isDone() || accepted.get() == null) && System.nanoTime() < deadline) {
                server.poll();
            }
            Connection c = connecting.get(0, TimeUnit.SECONDS);
            RemoteRegion target = exposed.toRemote();
            LocalRegion out = client.allocate(8);
            for (long i = 1; i <= 100; i++) {
                // Let the handshake's last frames and the previous ACK settle: the next pass
                // that reports work is the one that applies this write.
                while (server.poll() > 0) {
                    Thread.onSpinWait();
                }
                out.segment().set(ValueLayout.JAVA_LONG, 0, i);
                CompletableFuture<Void> written = c.write(out, target);
                int work = 0;
                while (work == 0 && System.nanoTime() < deadline) {
                    work = server.poll();
                }
                assertTrue(work > 0, "write " + i + ": no pass of the target reported applying it");
                assertEquals(i, exposed.segment().get(ValueLayout.JAVA_LONG, 0), "write " + i + " applied");
                // What an IO thread does: poll again while a pass did work, then stop (sleep).
                while (server.poll() > 0) {
                    Thread.onSpinWait();
                }
                // The target polls no more; the ACK must already be on its way.
                written.get(T, TimeUnit.SECONDS);
            }
        }
    }
}
