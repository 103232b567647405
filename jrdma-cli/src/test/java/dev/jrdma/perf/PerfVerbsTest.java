package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code jrdma perf} on real verbs: a server on one Soft-RoCE device and a client on the other
 * (two commands, as perftest is run), each test once with a few hundred iterations.
 */
@Tag("verbs")
class PerfVerbsTest {
    private static int nextPort = 19000 + (int) (ProcessHandle.current().pid() % 500) * 8;

    private static String env(String name, String vmName) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            v = System.getenv(vmName);
        }
        if (v == null || v.isBlank()) {
            fail("the verbs suite needs " + name + " (or " + vmName + ", set by scripts/softroce-vm): run it with scripts/verbs-suite");
        }
        return v;
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_lat", "read_lat", "send_lat", "atomic_lat", "write_bw", "read_bw", "send_bw", "atomic_bw"})
    void everyTestBetweenTwoDevices(String test) throws Exception {
        betweenTwoDevices(test, env("JRDMA_VERBS_SERVER_IP", "JRDMA_VM_IP0"));
    }

    /** The same over the server device's IPv6 RoCE v2 GID (fd77::1 in the VM). */
    @org.junit.jupiter.api.Test
    void writeLatencyOverIpv6() throws Exception {
        String error = System.getenv("JRDMA_VM_IP6_ERROR");
        if (error != null) {
            fail("the Soft-RoCE VM could not set up IPv6: " + error);
        }
        betweenTwoDevices("write_lat", env("JRDMA_VERBS_SERVER_IP6", "JRDMA_VM_IP6_0"));
    }

    private static void betweenTwoDevices(String test, String ip) throws Exception {
        String serverDevice = env("JRDMA_VERBS_SERVER_DEVICE", "JRDMA_VM_DEV0");
        String clientDevice = env("JRDMA_VERBS_CLIENT_DEVICE", "JRDMA_VM_DEV1");
        String port = String.valueOf(nextPort++);
        String size = test.startsWith("atomic") ? "8" : "4096";
        CompletableFuture<PerfCommandTest.Run> server = CompletableFuture.supplyAsync(() -> PerfCommandTest.perf(test,
                "--provider", "verbs", "-d", serverDevice, "--bind", ip, "-p", port, "-s", size));
        PerfCommandTest.Run client = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {   // until the server listens
            // A short counted warm-up: this checks each test's plumbing on verbs, not its steady state
            // (the default warm-up runs once, in gidIndexAndLoopbackOnVerbs).
            client = PerfCommandTest.perf(test, "--provider", "verbs", "-d", clientDevice, "-p", port, "-s", size, "-n", "300",
                    "--warmup", "100", "--json", ip);
            if (client.code() == 0 || !client.err().contains("refused")) {
                break;
            }
            Thread.sleep(200);
        }
        assertEquals(0, client.code(), client.err());
        assertTrue(client.out().contains("\"provider\":\"verbs\"") && client.out().contains("\"device\":\"" + clientDevice + "\""),
                client.out());
        assertEquals(List.of(Double.parseDouble(size)), PerfCommandTest.field(client.out(), "bytes"));
        assertTrue(client.out().contains("\"ack_timeout\":14"), "perftest's default -u, as the QP reports it: " + client.out());
        if (test.endsWith("_lat")) {
            assertTrue(PerfCommandTest.field(client.out(), "p50_us").get(0) > 0, client.out());
        } else {
            assertTrue(PerfCommandTest.field(client.out(), "bw_avg_MBps").get(0) > 0, client.out());
        }
        assertEquals(0, server.get(120, TimeUnit.SECONDS).code(), server.get().err());
    }

    /**
     * {@code -x}: the server listens on the address of that GID; {@code --loopback} on verbs,
     * where 127.0.0.1 has no RDMA device, runs on the device's first RoCE v2 IPv4 address; and
     * the default warm-up runs until settled. One loopback run (its server is a JVM of its own,
     * ~50 s to start on the VM's emulated CPU) checks all three; a wrong -x fails before one starts.
     */
    @org.junit.jupiter.api.Test
    void gidIndexAndLoopbackOnVerbs() throws Exception {
        String serverDevice = env("JRDMA_VERBS_SERVER_DEVICE", "JRDMA_VM_DEV0");
        String ip = env("JRDMA_VERBS_SERVER_IP", "JRDMA_VM_IP0");
        String gid = env("JRDMA_VERBS_GID_INDEX", "JRDMA_VM_GID_INDEX");
        PerfCommandTest.Run loop = PerfCommandTest.perf("read_lat", "--provider", "verbs", "-d", serverDevice, "--loopback",
                "-x", gid, "-u", "16", "-n", "200", "--json");
        assertEquals(0, loop.code(), loop.err());
        assertTrue(loop.out().contains("\"device\":\"" + serverDevice + "\""), loop.out());
        assertTrue(loop.out().contains("\"ack_timeout\":16"), "-u 16 as the QP reports it: " + loop.out());
        double warmUpSeconds = PerfCommandTest.field(loop.out(), "warmup_s").get(0);
        assertTrue(warmUpSeconds >= WarmUp.MIN_NANOS / 1e9 && warmUpSeconds < WarmUp.MAX_NANOS / 1e9 + 30,
                "the warm-up ran until settled, within its cap: " + loop.out());
        System.out.println("PerfVerbsTest: read_lat's warm-up on verbs: " + warmUpSeconds + " s, "
                + PerfCommandTest.field(loop.out(), "warmup_iterations").get(0) + " iterations, "
                + (loop.out().contains("\"warmup_settled\":true") ? "settled" : "not settled"));
        // A GID index that names no address of this device, and one that disagrees with --bind.
        PerfCommandTest.Run none = PerfCommandTest.perf("write_lat", "--provider", "verbs", "-d", serverDevice, "--loopback",
                "-x", "200", "-n", "10");
        assertEquals(1, none.code());
        assertTrue(none.err().contains("-x 200: " + serverDevice + " port 1 has no valid GID at index 200"), none.err());
        PerfCommandTest.Run disagree = PerfCommandTest.perf("write_lat", "--provider", "verbs", "-d", serverDevice, "--loopback",
                "-x", gid, "--bind", "127.0.0.1", "-n", "10");
        assertEquals(1, disagree.code());
        assertTrue(disagree.err().contains("disagree: GID " + gid + " of " + serverDevice + " is " + ip), disagree.err());
    }
}
