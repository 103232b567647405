package dev.jrdma;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/**
 * What the conformance tests run over, the way Aeron's system tests run over every channel:
 * a provider, the devices of the two ends, and where a server listens. The same test class
 * runs on verbs (in the Soft-RoCE VM, tag "verbs") and on the software providers (on the host).
 */
record Transport(String provider, String serverDevice, String clientDevice, boolean ipv6) {
    static Transport verbs() {
        return new Transport("verbs", VerbsTestAddresses.serverDevice(), VerbsTestAddresses.clientDevice(), false);
    }

    /** verbs between the same two devices over their IPv6 RoCE v2 GIDs. */
    static Transport verbsOverIpv6() {
        return new Transport("verbs", VerbsTestAddresses.serverDevice(), VerbsTestAddresses.clientDevice(), true);
    }

    static Transport tcp() {
        return new Transport("tcp", "tcp", "tcp", false);
    }

    /** tcp over the IPv6 loopback, ::1. */
    static Transport tcpOverIpv6() {
        return new Transport("tcp", "tcp", "tcp", true);
    }

    static Transport shm() {
        return new Transport("shm", "shm", "shm", false);
    }

    /** shm, its connection set up over the IPv6 loopback, ::1. */
    static Transport shmOverIpv6() {
        return new Transport("shm", "shm", "shm", true);
    }

    Rdma.Builder server() {
        return Rdma.builder().provider(provider).device(serverDevice);
    }

    Rdma.Builder client() {
        return Rdma.builder().provider(provider).device(clientDevice);
    }

    boolean isVerbs() {
        return provider.equals("verbs");
    }

    /** An address of the client's side to bind to, port 0 (IPv4). */
    InetSocketAddress clientBindAddress() {
        return isVerbs() ? VerbsTestAddresses.clientAddress() : new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    }

    /** An address for a server, with a port nothing listens on now. */
    InetSocketAddress nextServerAddress() {
        if (isVerbs()) {
            return ipv6 ? VerbsTestAddresses.nextServerAddress6() : VerbsTestAddresses.nextServerAddress();
        }
        InetAddress loopback;
        try {
            loopback = ipv6 ? InetAddress.getByName("::1") : InetAddress.getLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
        try (ServerSocket s = new ServerSocket(0, 1, loopback)) {
            return new InetSocketAddress(loopback, s.getLocalPort());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
