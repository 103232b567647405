package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class DevicesCommandTest {
    private static CommandRun run(String... args) {
        return CommandRun.of(args);
    }

    static DeviceInfo rxeLike() {
        byte[] v2 = new byte[16];
        v2[10] = (byte) 0xff;
        v2[11] = (byte) 0xff;
        v2[12] = 10;
        v2[13] = 77;
        v2[15] = 1;
        byte[] linkLocal = new byte[16];
        linkLocal[0] = (byte) 0xfe;
        linkLocal[1] = (byte) 0x80;
        linkLocal[15] = 7;
        PortInfo port = new PortInfo(1, 4, 5, 3, 2, 0, 0, 0, 1024, 64, 0x800000L, 1, 1, 5, 0x10000, List.of(
                new GidInfo(0, linkLocal, 1, 3), new GidInfo(1, v2, 2, 3)));
        return new DeviceInfo("rxe0", 0, 1, 0x505400fffe123456L, 0x505400fffe123456L, "", 0xffffff, 0, 0,
                -1L, 0xfffff000L, 1048560, 1048576, 0x21207c76, 32, 32, 1048576, 32767, 524288, 1048576, 128, 128,
                258048, 1, 1024, 1, 262144, 1048576, 27, 64, 15, 1, 0, 0, 0L, 1024, 0L, List.of(port));
    }

    @Test
    void withNoDeviceItListsTheProvidersAndWhatAutoChooses() {
        org.junit.jupiter.api.Assumptions.assumeFalse(java.nio.file.Files.isDirectory(Path.of("/sys/class/infiniband")),
                "this machine has RDMA devices: the device listing is tested in the VM");
        CommandRun r = run("devices");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("No RDMA device") && r.out().contains("tcp: available") && r.out().contains("shm: available"), r.out());
        assertTrue(r.out().contains("The default provider, auto, chooses shm (direct shared memory to peers on this host, tcp to the others), because verbs cannot be used here"), r.out());
    }

    @Test
    void anAbsentDeviceIsAnErrorNamingIt() {
        org.junit.jupiter.api.Assumptions.assumeFalse(java.nio.file.Files.isDirectory(Path.of("/sys/class/infiniband")),
                "this machine has RDMA devices: an absent one among them is tested in the VM");
        CommandRun r = run("devices", "-d", "mlx5_0");
        assertEquals(1, r.code(), r.out());
        assertTrue(r.err().startsWith("jrdma devices: device mlx5_0 not found (No RDMA device"), r.err());
        assertEquals("", r.out());
    }

    @Test
    void printsIbvDevinfoLinesAndJrdmaCapabilities() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DevicesCommand.print(rxeLike(), true, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(out.startsWith("hca_id:\trxe0\n"), out);
        assertTrue(out.contains("\tnode_guid:\t\t\t5054:00ff:fe12:3456\n"), out);
        assertTrue(out.contains("\tvendor_id:\t\t\t0xffffff\n"), out);
        assertTrue(out.contains("\tatomic_cap:\t\t\tATOMIC_HCA (1)\n"), out);
        assertTrue(out.contains("\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"), out);
        assertTrue(out.contains("\t\t\tmax_mtu:\t\t4096 (5)\n"), out);
        assertTrue(out.contains("\t\t\tactive_mtu:\t\t1024 (3)\n"), out);
        assertTrue(out.contains("\t\t\tlink_layer:\t\tEthernet\n"), out);
        assertTrue(out.contains("\t\t\tGID[  0]:\t\tfe80::7, RoCE v1\n"), out);
        assertTrue(out.contains("\t\t\tGID[  1]:\t\t::ffff:10.77.0.1, RoCE v2\n"), out);
        assertTrue(out.contains("jrdma_capabilities:\t\tatomics=yes srq=yes odp=no max_rd_atomic=128"), out);
        // 0x21207c76: MEM_MGT_EXTENSIONS, MEM_WINDOW_TYPE_2B, not MEM_WINDOW (bit 17) nor XRC; max_mcast_grp 1024.
        assertTrue(out.contains("\tjrdma_has:\t\t\tatomics srq memory_window_type_2b ud_multicast\n"), out);
        assertTrue(out.contains("\tjrdma_lacks:\t\t\txrc memory_window_type_1 memory_window_type_2a odp odp_implicit device_memory\n"), out);
        assertTrue(out.contains("\t\tjrdma_capability xrc:\tno (IBV_DEVICE_XRC (device_cap_flags bit 20))\n"), out);
        assertTrue(out.contains("\tmax_mcast_grp:\t\t\t1024\n"), out);
    }

    @Test
    void withoutVerboseAnEthernetPortShowsOnlyRoceV2Gids() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DevicesCommand.print(rxeLike(), false, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(out.contains("GID[  1]:\t\t::ffff:10.77.0.1, RoCE v2"), out);
        assertTrue(!out.contains("GID[  0]") && !out.contains("max_qp:"), out);
    }

    @Test
    void badUsageIsExitTwoWithTheReason() {
        CommandRun unknown = run("devices", "--frobnicate");
        assertEquals(2, unknown.code());
        assertTrue(unknown.err().contains("unknown option '--frobnicate'"), unknown.err());
        CommandRun missing = run("devices", "-d");
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("-d needs a device name"), missing.err());
        CommandRun command = run("nosuch");
        assertEquals(2, command.code());
        assertTrue(command.err().contains("unknown command 'nosuch'"), command.err());
        CommandRun none = run();
        assertEquals(2, none.code());
        assertTrue(none.err().contains("usage: jrdma"), none.err());
        assertEquals(0, run("help").code());
    }

    @Test
    void withoutNativeAccessTheCommandNamesTheExactFlag() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "dev.jrdma.cli.Main", "devices")
                .redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("native access is not enabled for jrdma; start the JVM with --enable-native-access=ALL-UNNAMED"), out);
        assertTrue(out.contains("Providers:") && out.contains("verbs: unavailable"), out);
        assertTrue(out.contains("tcp: unavailable (provider 'tcp' is unavailable: native access is off")
                && out.contains("auto, finds nothing it can use"), out);
    }
}
