package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link DatagramConformance} on verbs (UD queue pairs on Soft-RoCE, found through rdma_cm's SIDR),
 * a resolve that nobody answers, and a multicast group of three endpoints on three devices of the
 * four-device bed (softroce-vm --group 4), with a fourth that did not join.
 */
@Tag("verbs")
class DatagramVerbsTest extends DatagramConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }

    @Test
    void resolvingAnAddressWhereNoEndpointIsBoundFailsNamingIt() throws Exception {
        try (Rdma client = transport().client().build()) {
            DatagramEndpoint c = client.datagramEndpoint(transport().clientBindAddress(), 2);
            InetSocketAddress nobody = transport().nextServerAddress();
            ExecutionException x = assertThrows(ExecutionException.class,
                    () -> c.resolve(nobody).get(T.toSeconds(), TimeUnit.SECONDS));
            assertTrue(x.getCause() instanceof RdmaException, String.valueOf(x.getCause()));
            assertTrue(x.getCause().getMessage().contains(nobody.toString()), x.getCause().getMessage());
            System.out.println("[datagram] resolve of " + nobody + ": " + x.getCause().getMessage());
        }
    }

    @Test
    void aGroupOfThreeOnThreeDevicesReceivesWhatOneSendsAndALeaverStopsReceiving() throws Exception {
        List<String> devices = List.of(env("JRDMA_VM_GROUP_DEVS").split(","));
        List<String> ips = List.of(env("JRDMA_VM_GROUP_IPS").split(","));
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        InetAddress group = InetAddress.getByName("239.77.0.2");
        List<Rdma> all = new ArrayList<>();
        try {
            List<DatagramEndpoint> eps = new ArrayList<>();
            List<DatagramAddress> joined = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Rdma r = Rdma.builder().provider("verbs").device(devices.get(i)).build();
                all.add(r);
                DatagramEndpoint e = r.datagramEndpoint(new InetSocketAddress(ips.get(i), 0), 8);
                eps.add(e);
                if (i < 3) {
                    DatagramAddress g = e.join(group).get(T.toSeconds(), TimeUnit.SECONDS);
                    assertTrue(g.isGroup());
                    assertEquals(0xFFFFFF, g.queuePairNumber(), "a group's QPN");
                    joined.add(g);
                }
            }
            byte[] news = "news for every member".getBytes(StandardCharsets.US_ASCII);
            eps.get(0).send(joined.get(0), filled(all.get(0), news)).get(T.toSeconds(), TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                try (Datagram d = eps.get(i).receive(T)) {
                    assertEquals("news for every member", text(d), "member " + i);
                    assertEquals(InetAddress.getByName(ips.get(0)), d.sender().address().getAddress(), "member " + i);
                }
            }
            // Not a member: nothing comes (a short wait: the members above already had theirs).
            assertThrows(RdmaTimeoutException.class, () -> eps.get(3).receive(Duration.ofMillis(500)));

            // Member 2 leaves; member 1 answers the sender directly, from the group's datagram.
            eps.get(2).leave(joined.get(2));
            byte[] more = "after one left".getBytes(StandardCharsets.US_ASCII);
            eps.get(0).send(joined.get(0), filled(all.get(0), more)).get(T.toSeconds(), TimeUnit.SECONDS);
            for (int i = 0; i < 2; i++) {
                try (Datagram d = eps.get(i).receive(T)) {
                    assertEquals("after one left", text(d), "member " + i);
                    if (i == 1) {
                        eps.get(1).send(d.sender(), filled(all.get(1), "ack from 1".getBytes(StandardCharsets.US_ASCII)))
                                .get(T.toSeconds(), TimeUnit.SECONDS);
                    }
                }
            }
            try (Datagram ack = eps.get(0).receive(T)) {
                assertEquals("ack from 1", text(ack), "a group member answered the sender of a group datagram");
            }
            assertThrows(RdmaTimeoutException.class, () -> eps.get(2).receive(Duration.ofMillis(500)));
            IllegalArgumentException left = assertThrows(IllegalArgumentException.class,
                    () -> eps.get(2).leave(eps.get(0).resolve(eps.get(3).localAddress()).get(T.toSeconds(), TimeUnit.SECONDS)));
            assertTrue(left.getMessage().contains("another endpoint"), left.getMessage());
        } finally {
            for (Rdma r : all) {
                r.close();
            }
        }
    }

    private static String env(String name) {
        String v = System.getenv(name);
        assertTrue(v != null && !v.isBlank(), name + " is set by scripts/softroce-vm --group 4");
        return v;
    }
}
