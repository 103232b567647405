package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionRejectedException;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 45 on real verbs: rdma_cm's listen is the kernel's, but who gets in is jrdma's accept
 * policy (findings 3 and 10), on every provider. softroce-vm --group 4 gives the three clients
 * addresses of their own: one guesses the auth token, one hoards connections, and an honest one
 * on the third connects and is served throughout. The guesser's first four wrong tokens are
 * looked at, and then it is refused unchecked while its source waits; the
 * hoarder gets its source's share ({@code maxConnectionsPerSource} 4) and no more.
 */
@Tag("verbs")
class AdmissionVerbsTest {
    /** Short: on verbs a connection request has 44 bytes of private data for it and the exposed region. */
    private static final byte[] TOKEN = "verbs-ok".getBytes(StandardCharsets.US_ASCII);

    @Test
    void aGuessingSourceAndAHoardingSourceAreRefusedWhileAnotherIsServed() throws Exception {
        List<String> devices = List.of(VerbsTestAddresses.groupEnv("JRDMA_VM_GROUP_DEVS").split(","));
        List<String> ips = List.of(VerbsTestAddresses.groupEnv("JRDMA_VM_GROUP_IPS").split(","));
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        List<Connection> hoarded = new ArrayList<>();
        try (Rdma server = Rdma.builder().provider("verbs").device(devices.get(0)).maxConnectionsPerSource(4).build();
             LocalRegion exposed = server.allocate(64);
             RdmaServer listener = server.listen(new InetSocketAddress(ips.get(0), 23400),
                     ConnectionConfig.builder().authToken(TOKEN).privateData(exposed.toRemote().toDescriptor()).build(),
                     c -> { });
             Rdma guesser = Rdma.builder().provider("verbs").device(devices.get(1)).build();
             Rdma hoarder = Rdma.builder().provider("verbs").device(devices.get(2)).build();
             Rdma honest = Rdma.builder().provider("verbs").device(devices.get(3)).build();
             LocalRegion into = honest.allocate(8)) {
            InetSocketAddress at = listener.address();
            // Guesses: the first four are looked at; then the source waits (100 ms, doubling with each
            // one looked at again) and is refused unchecked meanwhile. (That even the right token is
            // refused while it waits is AuthBruteForceTest's, on tcp and shm: a connect in the VM takes
            // about as long as the first waits.)
            List<String> answers = new ArrayList<>();
            boolean unchecked = false;
            for (int i = 0; i < 30 && !unchecked; i++) {
                String a = refusal(guesser, at, ("guess " + i).getBytes(StandardCharsets.US_ASCII));
                answers.add(a);
                unchecked = a.contains("too many failed attempts from this address: retry in");
            }
            for (int i = 0; i < 4; i++) {
                assertTrue(answers.get(i).contains("the auth token does not match"), "guess " + i + ": " + answers);
            }
            assertTrue(unchecked, "the guessing source came to be refused unchecked: " + answers);
            assertTrue(answers.stream().allMatch(a -> a.contains("the auth token does not match")
                    || a.contains("too many failed attempts")), answers.toString());
            roundTrip(honest, at, into, 1);
            // Hoarding: the source's share, then "too many connections from this address".
            for (int i = 0; i < 4; i++) {
                hoarded.add(hoarder.connect(at, ConnectionConfig.builder().authToken(TOKEN).build()));
            }
            String fifth = refusal(hoarder, at, TOKEN);
            assertTrue(fifth.contains("too many connections from this address: the server takes 4"), fifth);
            roundTrip(honest, at, into, 2);
        } finally {
            hoarded.forEach(Connection::close);
        }
    }

    /** Connects with {@code token}, writes {@code value} to the exposed region and reads it back. */
    private static void roundTrip(Rdma client, InetSocketAddress at, LocalRegion into, long value) {
        try (Connection c = client.connect(at, ConnectionConfig.builder().authToken(TOKEN).build())) {
            RemoteRegion r = RemoteRegion.fromDescriptor(c.peerPrivateData()).slice(0, 8);
            into.segment().set(ValueLayout.JAVA_LONG, 0, value);
            c.writeSync(into, r);
            into.segment().set(ValueLayout.JAVA_LONG, 0, 0);
            c.readSync(r, into);
            assertEquals(value, into.segment().get(ValueLayout.JAVA_LONG, 0), "the honest client read back what it wrote");
        } catch (ConnectionRejectedException e) {
            throw new AssertionError("the honest client was refused: " + e.getMessage(), e);
        }
    }

    /** The server's reason for refusing a connect with {@code token}. */
    private static String refusal(Rdma client, InetSocketAddress at, byte[] token) {
        ConnectionRejectedException e = assertThrows(ConnectionRejectedException.class,
                () -> client.connect(at, ConnectionConfig.builder().authToken(token).build()).close());
        return String.valueOf(e.getMessage());
    }
}
