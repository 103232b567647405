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
record Transport(String provider, String serverDevice, String clientDevice) {
    static Transport verbs() {
        return new Transport("verbs", VerbsTestAddresses.serverDevice(), VerbsTestAddresses.clientDevice());
    }

    static Transport tcp() {
        return new Transport("tcp", "tcp", "tcp");
    }

    static Transport shm() {
        return new Transport("shm", "shm", "shm");
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

    /** An address for a server, with a port nothing listens on now. */
    InetSocketAddress nextServerAddress() {
        if (isVerbs()) {
            return VerbsTestAddresses.nextServerAddress();
        }
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
