package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * {@link SharedReceiveQueueConformance} on verbs (ibv_srq on Soft-RoCE: the 256 connections' test
 * took 58 s in the VM), and a fan-in across the four-device bed (11 s): clients on three devices,
 * one server's shared receive queue on the fourth.
 */
@org.junit.jupiter.api.Tag("verbs")
class SharedReceiveQueueVerbsTest extends SharedReceiveQueueConformance {
    private static final long T = 120;

    @Override
    protected Transport transport() {
        return Transport.verbs();
    }

    @Override
    protected int fanInConnections() {
        return 256;
    }

    /**
     * softroce-vm --group 4: a server on rxeg0 with one shared receive queue of 64 buffers; three
     * clients, each on a device of its own, with 8 connections each, send 8 messages a connection.
     * Every message arrives whole and in its connection's order, and every buffer is posted again.
     */
    @Test
    void clientsOnThreeDevicesFanInToOneServersSharedReceiveQueue() throws Exception {
        List<String> devices = List.of(VerbsTestAddresses.groupEnv("JRDMA_VM_GROUP_DEVS").split(","));
        List<String> ips = List.of(VerbsTestAddresses.groupEnv("JRDMA_VM_GROUP_IPS").split(","));
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        int perClient = 8, messages = 8, connections = 3 * perClient;
        List<Rdma> clients = new ArrayList<>();
        try (Rdma server = Rdma.builder().provider("verbs").device(devices.get(0)).build()) {
            SharedReceiveQueue srq = server.sharedReceiveQueue(64, 1024);
            int[] next = new int[connections];
            AtomicReference<String> wrong = new AtomicReference<>();
            CountDownLatch all = new CountDownLatch(connections * messages);
            ConnectionConfig config = ConnectionConfig.builder().sharedReceiveQueue(srq).build();
            try (RdmaServer s = server.listen(new InetSocketAddress(ips.get(0), 23300), config,
                    c -> c.onReceive((conn, m) -> {
                        byte[] got = m.data().toArray(ValueLayout.JAVA_BYTE);
                        int from = (got[0] & 0xFF) | (got[1] & 0xFF) << 8;
                        synchronized (next) {
                            if (from >= connections || got[2] != next[from]
                                    || !Arrays.equals(got, message(from, got[2], got.length))) {
                                wrong.compareAndSet(null, "connection " + from + " message " + got[2]);
                            } else {
                                next[from]++;
                            }
                        }
                        all.countDown();
                    }))) {
                List<CompletableFuture<Connection>> connecting = new ArrayList<>();
                for (int d = 1; d <= 3; d++) {
                    Rdma client = Rdma.builder().provider("verbs").device(devices.get(d)).build();
                    clients.add(client);
                    for (int i = 0; i < perClient; i++) {
                        connecting.add(client.connectAsync(s.address(), ConnectionConfig.defaults()));
                    }
                }
                List<Connection> conns = new ArrayList<>();
                for (CompletableFuture<Connection> f : connecting) {
                    conns.add(f.get(T, TimeUnit.SECONDS));
                }
                List<CompletableFuture<Void>> sent = new ArrayList<>();
                List<LocalRegion> regions = new ArrayList<>();
                for (int seq = 0; seq < messages; seq++) {
                    for (int i = 0; i < connections; i++) {
                        byte[] data = message(i, seq, 64 + (i * 37 + seq * 211) % 960);
                        LocalRegion r = clients.get(i / perClient).allocate(data.length);
                        r.segment().copyFrom(MemorySegment.ofArray(data));
                        regions.add(r);
                        sent.add(conns.get(i).send(r));
                    }
                }
                for (CompletableFuture<Void> f : sent) {
                    f.get(T, TimeUnit.SECONDS);
                }
                assertTrue(all.await(T, TimeUnit.SECONDS), "received " + (connections * messages - all.getCount()));
                assertEquals(null, wrong.get(), "every message whole, in its connection's order");
                assertEquals(connections, srq.connections());
                conns.forEach(Connection::close);
                regions.forEach(LocalRegion::close);
            }
        } finally {
            clients.forEach(Rdma::close);
        }
    }
}
