package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * Where the verbs suite runs: two RDMA devices' IPv4 addresses. scripts/softroce-vm sets
 * JRDMA_VM_IP0/1 (rxe0 on veth0, rxe1 on veth1); on a machine with real NICs set
 * JRDMA_VERBS_SERVER_IP / JRDMA_VERBS_CLIENT_IP. Missing addresses fail the suite: it never
 * skips silently.
 */
final class VerbsTestBed {
    private static final int BASE_PORT = 7471;
    private static int nextPort = BASE_PORT + (int) (ProcessHandle.current().pid() % 500) * 8;

    private VerbsTestBed() {
    }

    static InetAddress serverIp() {
        return ip("JRDMA_VERBS_SERVER_IP", "JRDMA_VM_IP0");
    }

    static InetAddress clientIp() {
        return ip("JRDMA_VERBS_CLIENT_IP", "JRDMA_VM_IP1");
    }

    /** A fresh port for each connection, so TIME_WAIT of an earlier one never gets in the way. */
    static synchronized InetSocketAddress nextServerAddress() {
        return new InetSocketAddress(serverIp(), nextPort++);
    }

    private static InetAddress ip(String name, String vmName) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            value = System.getenv(vmName);
        }
        if (value == null || value.isBlank()) {
            fail("the verbs suite needs " + name + " (or " + vmName + ", set by scripts/softroce-vm): "
                    + "run it with scripts/verbs-suite");
        }
        try {
            return InetAddress.getByName(value);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(name + "=" + value, e);
        }
    }
}
