package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.UnsupportedCapabilityException;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * {@link DatagramConformance} on tcp (UDP sockets), and what only a plain UDP peer shows: it can
 * talk to an endpoint both ways, a datagram larger than the endpoint's buffers is dropped without
 * harm, and a group cannot be joined on an interface without multicast.
 */
class DatagramTcpTest extends DatagramConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }

    @Test
    void aPlainUdpPeerIsAnsweredAndItsOversizedDatagramIsDropped() throws Exception {
        try (Rdma rdma = transport().server().build(); DatagramSocket peer = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().nextServerAddress(), 4);
            peer.setSoTimeout((int) T.toMillis());
            byte[] tooBig = new byte[e.maxMessageSize() + 1];
            peer.send(new DatagramPacket(tooBig, tooBig.length, e.localAddress()));
            byte[] hello = "hello from a UDP socket".getBytes(StandardCharsets.US_ASCII);
            peer.send(new DatagramPacket(hello, hello.length, e.localAddress()));
            try (Datagram d = e.receive(T)) {
                assertArrayEquals(hello, d.data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                        "the oversized datagram before it was dropped, this one arrived");
                assertEquals(new InetSocketAddress(InetAddress.getLoopbackAddress(), peer.getLocalPort()), d.sender().address());
                byte[] reply = "and back".getBytes(StandardCharsets.US_ASCII);
                e.send(d.sender(), filled(rdma, reply)).get(T.toSeconds(), TimeUnit.SECONDS);
                DatagramPacket p = new DatagramPacket(new byte[64], 64);
                peer.receive(p);
                assertEquals("and back", new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII));
            }
            assertEquals(1, e.received());
        }
    }

    @Test
    void joiningOnAnInterfaceWithoutMulticastIsRefusedByName() throws Exception {
        NetworkInterface lo = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
        org.junit.jupiter.api.Assumptions.assumeFalse(lo.supportsMulticast(),
                "lo has the MULTICAST flag on this machine: joining there is allowed");
        try (Rdma rdma = transport().server().build()) {
            DatagramEndpoint e = rdma.datagramEndpoint(transport().clientBindAddress(), 4);
            ExecutionException x = assertThrows(ExecutionException.class,
                    () -> e.join(InetAddress.getByName("239.77.0.1")).get(T.toSeconds(), TimeUnit.SECONDS));
            assertTrue(x.getCause() instanceof UnsupportedCapabilityException, String.valueOf(x.getCause()));
            assertTrue(x.getCause().getMessage().contains("MULTICAST") && x.getCause().getMessage().contains(lo.getName()),
                    x.getCause().getMessage());
        }
    }
}
