package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * jrdma's Flight Recorder events, read back from a recording file: a connection's life
 * (established, failed, closed, a connect refused), regions (registered, exposed, revoked, a
 * lease that ended), an RNR retry budget running out, and the sampled operation latency, which a
 * recording has to ask for. On tcp, both ends in this JVM.
 */
class FlightRecorderEventsTest {
    private static final long T = 30;
    private static final String[] EVENTS = {"ConnectionEstablished", "ConnectionClosed", "ConnectionFailed",
        "RegionRegistered", "RegionExposed", "RegionRevoked", "LeaseEnded", "RetryExceeded", "OperationLatency"};

    @Test
    void aRecordingHoldsTheEventsOfConnectionsRegionsRetriesAndSampledOperations(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("jrdma.jfr");
        CountDownLatch leaseEnded = new CountDownLatch(1), closed = new CountDownLatch(2);
        // No receive is taken by the server and its one buffer fills: the second send waits past
        // the RNR budget ((0 + 1) x the RNR timer) and fails.
        ConnectionConfig config = ConnectionConfig.builder().receiveQueueDepth(1).receiveBufferSize(64).rnrRetry(0).build();
        InetSocketAddress loopback = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        int[] refusedPort = {0};
        try (RecordingStream rs = new RecordingStream()) {
            for (String e : EVENTS) {
                rs.enable("dev.jrdma." + e);
            }
            rs.onEvent("dev.jrdma.LeaseEnded", e -> leaseEnded.countDown());
            rs.onEvent("dev.jrdma.ConnectionClosed", e -> closed.countDown());
            rs.startAsync();
            try (Rdma server = Rdma.builder().provider("tcp").build(); Rdma client = Rdma.builder().provider("tcp").build();
                 Arena arena = Arena.ofShared()) {
                LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
                RdmaServer listener = server.listen(loopback, config, accepted::add);
                LocalRegion registered = client.register(arena.allocate(4096, 64), Access.LOCAL_WRITE);
                LocalRegion exposed = server.allocate(4096);
                RemoteRegion readable = RemoteRegion.fromDescriptor(exposed.toRemote(Access.REMOTE_READ).toDescriptor());
                exposed.lease(Duration.ofMillis(50), Access.REMOTE_READ);
                try (Connection c = client.connect(listener.address(), config)) {
                    assertNotNull(accepted.poll(T, TimeUnit.SECONDS), "accepted");
                    for (int i = 0; i < 2 * ConnectionStatistics.LATENCY_SAMPLE_EVERY; i++) {
                        c.readSync(readable.slice(0, 256), registered.slice(0, 256));
                    }
                    c.sendSync(registered.slice(0, 8));   // takes the server's only receive
                    CompletionException e = assertThrows(CompletionException.class,
                            () -> c.send(registered.slice(0, 8)).orTimeout(T, TimeUnit.SECONDS).join());
                    assertTrue(String.valueOf(e.getCause().getMessage()).contains("RNR_RETRY_EXC_ERR"), e.toString());
                }
                exposed.close();
                registered.close();
                try (ServerSocket nobody = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                    refusedPort[0] = nobody.getLocalPort();
                    InetSocketAddress refused = new InetSocketAddress(InetAddress.getLoopbackAddress(), refusedPort[0]);
                    nobody.close();   // the port is free again: nothing listens there
                    assertThrows(Exception.class, () -> client.connect(refused));
                }
                assertTrue(leaseEnded.await(T, TimeUnit.SECONDS), "the lease's end was recorded");
                assertTrue(closed.await(T, TimeUnit.SECONDS), "both ends' closes were recorded");
            }
            rs.dump(file);
        }

        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        one(events, "dev.jrdma.ConnectionEstablished", e -> !e.getBoolean("accepted") && e.getString("provider").equals("tcp")
                && e.getInt("queuePairNumber") != 0);
        one(events, "dev.jrdma.ConnectionEstablished", e -> e.getBoolean("accepted"));
        one(events, "dev.jrdma.RegionRegistered", e -> e.getString("what").equals("register") && e.getLong("length") == 4096
                && e.getString("access").contains("LOCAL_WRITE"));
        one(events, "dev.jrdma.RegionRegistered", e -> e.getString("what").equals("pool chunk"));
        one(events, "dev.jrdma.RegionExposed", e -> e.getString("scope").equals("every peer") && e.getLong("length") == 4096
                && e.getString("access").contains("REMOTE_READ"));
        one(events, "dev.jrdma.RegionExposed", e -> e.getString("scope").equals("lease"));
        one(events, "dev.jrdma.LeaseEnded", e -> e.getLong("leaseMillis") == 50 && e.getLong("length") == 4096);
        one(events, "dev.jrdma.RegionRevoked", e -> e.getString("reason").equals("the region was closed")
                && e.getLong("length") == 4096);
        one(events, "dev.jrdma.RetryExceeded", e -> e.getString("kind").equals("RNR") && e.getString("operation").equals("send")
                && e.getInt("retries") == 0);
        one(events, "dev.jrdma.ConnectionFailed", e -> !e.getBoolean("whileConnecting")
                && e.getString("message").contains("RNR_RETRY_EXC_ERR"));
        one(events, "dev.jrdma.ConnectionFailed", e -> e.getBoolean("whileConnecting")
                && e.getString("message").contains(String.valueOf(refusedPort[0])));
        one(events, "dev.jrdma.ConnectionClosed", e -> e.getLong("operationsCompleted") >= 2 * ConnectionStatistics.LATENCY_SAMPLE_EVERY + 1
                && e.getLong("operationsFailed") >= 1);
        List<RecordedEvent> sampled = of(events, "dev.jrdma.OperationLatency");
        assertTrue(sampled.size() >= 2, "one read in " + ConnectionStatistics.LATENCY_SAMPLE_EVERY + " of "
                + 2 * ConnectionStatistics.LATENCY_SAMPLE_EVERY + " is sampled: " + sampled.size());
        for (RecordedEvent e : sampled) {
            assertTrue(e.getLong("latency") > 0 && e.getLong("bytes") > 0, e.toString());
        }
    }

    /** A recording that does not ask for it has no OperationLatency event: it is off by default. */
    @Test
    void theSampledOperationLatencyIsOffUnlessAskedFor(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("default.jfr");
        try (jdk.jfr.Recording r = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("default"))) {
            r.start();
            try (Rdma server = Rdma.builder().provider("tcp").build(); Rdma client = Rdma.builder().provider("tcp").build()) {
                LocalRegion exposed = server.allocate(4096);
                RemoteRegion remote = RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor());
                RdmaServer listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
                try (Connection c = client.connect(listener.address()); LocalRegion buf = client.allocate(64)) {
                    for (int i = 0; i < 4 * ConnectionStatistics.LATENCY_SAMPLE_EVERY; i++) {
                        c.writeSync(buf, remote.slice(0, 64));
                    }
                    assertEquals(4, c.statistics().latency().samples(), "the statistics sample all the same");
                }
            }
            r.stop();
            r.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        assertEquals(List.of(), of(events, "dev.jrdma.OperationLatency"));
        assertEquals(2, of(events, "dev.jrdma.ConnectionEstablished").size(), "the other events are on by default");
    }

    private static List<RecordedEvent> of(List<RecordedEvent> events, String name) {
        List<RecordedEvent> out = new ArrayList<>();
        for (RecordedEvent e : events) {
            if (e.getEventType().getName().equals(name)) {
                out.add(e);
            }
        }
        return out;
    }

    /** At least one event {@code name} matches {@code test}; the failure lists those of that name. */
    private static void one(List<RecordedEvent> events, String name, Predicate<RecordedEvent> test) {
        List<RecordedEvent> named = of(events, name);
        assertTrue(named.stream().anyMatch(test), "no matching " + name + " among " + named.size() + ": " + named);
    }
}
