package dev.jrdma.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.doctor.EnvironmentFacts.Device;
import dev.jrdma.doctor.EnvironmentFacts.Gid;
import dev.jrdma.doctor.EnvironmentFacts.Port;
import dev.jrdma.doctor.Finding.Level;

import java.net.InetAddress;
import java.util.List;

import org.junit.jupiter.api.Test;

/** {@code jrdma doctor}'s conclusions for machines this one is not: each fact that matters, and what it says to do. */
class DiagnosisTest {
    private static final Runtime.Version JDK25 = Runtime.Version.parse("25.0.3+9");

    private static Port rxePort(boolean active, Gid... gids) {
        return new Port(1, active ? "PORT_ACTIVE" : "PORT_DOWN", active, "Ethernet (RoCE)", 1024, List.of(gids));
    }

    private static Gid gid(int index, String ip, String type) throws Exception {
        return new Gid(index, ip, type, InetAddress.getByName(ip), "veth0");
    }

    /** A healthy machine with one RoCE device; each test changes one thing. */
    private static EnvironmentFacts healthy(List<Device> devices) {
        return new EnvironmentFacts(JDK25, true, null, List.of("rdma_cm (rw)", "uverbs0 (rw)"), devices, null, -1, 0, false,
                "loaded", "absent", "/usr/sbin/rdma", List.of("eth1", "veth0"), 0, 2048, "verbs, because rxe0 is up");
    }

    private static EnvironmentFacts with(EnvironmentFacts f, Runtime.Version jdk, boolean nativeAccess, String libraries,
                                         List<Device> devices, long memlock, boolean ipcLock, String rxe, String siw, String rdmaTool) {
        return new EnvironmentFacts(jdk, nativeAccess, libraries, f.deviceNodes(), devices, f.devicesError(), memlock,
                f.pinnedBytes(), ipcLock, rxe, siw, rdmaTool, f.netdevs(), f.hugePagesTotal(), f.hugePageKb(), f.autoChoice());
    }

    private static Finding only(List<Finding> findings, String topic) {
        List<Finding> f = findings.stream().filter(x -> x.topic().equals(topic)).toList();
        assertEquals(1, f.size(), topic + " in " + findings);
        return f.get(0);
    }

    @Test
    void aHealthyRoceMachineIsAllOkAndSaysWhichGidAnAddressUses() throws Exception {
        Device rxe = new Device("rxe0", List.of(rxePort(true, gid(0, "fe80::1", "RoCE v1"), gid(1, "10.77.0.1", "RoCE v2"))));
        List<Finding> f = Diagnosis.of(healthy(List.of(rxe)));
        assertTrue(f.stream().noneMatch(x -> x.level() == Level.WARN || x.level() == Level.FAIL), f.toString());
        assertEquals("PORT_ACTIVE, Ethernet (RoCE), active MTU 1024", only(f, "rxe0 port 1").found());
        assertTrue(only(f, "rxe0 port 1 GIDs").found().contains("1: 10.77.0.1 RoCE v2 on veth0"), f.toString());
        String index = only(f, "rxe0 port 1 GID index").found();
        assertTrue(index.contains("10.77.0.1 use GID 1") && index.contains("-x 1"), index);
        assertEquals(Level.OK, only(f, "memlock").level());
        assertTrue(f.stream().noneMatch(x -> x.topic().startsWith("Soft-")), "a machine with a device needs no Soft-RoCE hint");
    }

    @Test
    void anOldJdkIsTheOneFailure() {
        EnvironmentFacts f = healthy(List.of());
        List<Finding> d = Diagnosis.of(with(f, Runtime.Version.parse("21.0.2"), true, null, List.of(), -1, false, "loaded", "absent", "rdma"));
        Finding jdk = only(d, "JDK");
        assertEquals(Level.FAIL, jdk.level());
        assertTrue(jdk.found().contains("needs Java 25") && jdk.fix().contains("JDK 25"), jdk.toString());
        assertEquals(1, d.stream().filter(x -> x.level() == Level.FAIL).count());
    }

    @Test
    void nativeAccessOffSaysTheFlag() {
        Finding n = only(Diagnosis.of(with(healthy(List.of()), JDK25, false, null, List.of(), -1, false, "loaded", "absent", "rdma")),
                "native access");
        assertEquals(Level.WARN, n.level());
        assertTrue(n.fix().contains("--enable-native-access=ALL-UNNAMED"), n.fix());
    }

    @Test
    void missingLibrariesSayWhatToInstallAndThatSoftwareProvidersStillWork() {
        List<Finding> d = Diagnosis.of(with(healthy(List.of()), JDK25, true, "libibverbs.so.1: cannot open shared object file",
                List.of(), -1, false, "available", "absent", "rdma"));
        Finding lib = only(d, "RDMA libraries");
        assertEquals(Level.WARN, lib.level());
        assertTrue(lib.found().contains("libibverbs.so.1") && lib.found().contains("software providers"), lib.found());
        assertTrue(lib.fix().contains("apt-get install libibverbs1 librdmacm1 ibverbs-providers"), lib.fix());
        assertTrue(d.stream().noneMatch(x -> x.topic().equals("devices")), "no device check without the libraries");
    }

    @Test
    void aPortThatIsDownAndAPortWithoutAnIpv4GidAreWarnings() throws Exception {
        Device down = new Device("mlx5_0", List.of(rxePort(false, gid(1, "192.168.1.5", "RoCE v2"))));
        Device v6only = new Device("rxe1", List.of(rxePort(true, gid(0, "fe80::2", "RoCE v1"), gid(1, "fe80::2", "RoCE v2"))));
        List<Finding> d = Diagnosis.of(healthy(List.of(down, v6only)));
        Finding p = only(d, "mlx5_0 port 1");
        assertEquals(Level.WARN, p.level());
        assertTrue(p.found().startsWith("PORT_DOWN") && p.fix().contains("ip link set NETDEV up"), p.toString());
        List<Finding> gids = d.stream().filter(x -> x.topic().equals("rxe1 port 1 GIDs") && x.level() == Level.WARN).toList();
        assertEquals(1, gids.size(), d.toString());
        assertTrue(gids.get(0).found().contains("no RoCE v2 GID with an IPv4 address") && gids.get(0).fix().contains("ip addr add"));
    }

    @Test
    void aSmallMemlockLimitWarnsWhereDevicesPinMemoryAndSaysHowToRaiseIt() throws Exception {
        Device rxe = new Device("rxe0", List.of(rxePort(true, gid(1, "10.77.0.1", "RoCE v2"))));
        Finding m = only(Diagnosis.of(with(healthy(List.of()), JDK25, true, null, List.of(rxe), 8L << 20, false, "loaded", "absent",
                "rdma")), "memlock");
        assertEquals(Level.WARN, m.level());
        assertTrue(m.found().contains("RLIMIT_MEMLOCK is 8 MiB") && m.fix().contains("ulimit -l unlimited"), m.toString());
        // Without a device nothing is pinned: worth knowing, not a warning.
        assertEquals(Level.INFO, only(Diagnosis.of(with(healthy(List.of()), JDK25, true, null, List.of(), 8L << 20, false,
                "loaded", "absent", "rdma")), "memlock").level());
        // CAP_IPC_LOCK lifts the limit.
        assertEquals(Level.OK, only(Diagnosis.of(with(healthy(List.of()), JDK25, true, null, List.of(rxe), 8L << 20, true,
                "loaded", "absent", "rdma")), "memlock").level());
    }

    @Test
    void withoutADeviceItSaysHowToAddSoftRoceOrSiw() {
        EnvironmentFacts none = healthy(List.of());
        Finding rxe = only(Diagnosis.of(with(none, JDK25, true, null, List.of(), -1, false, "available", "absent", null)), "Soft-RoCE");
        assertTrue(rxe.fix().contains("modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth1"), rxe.fix());
        assertTrue(rxe.fix().contains("apt-get install iproute2"), "no rdma tool: " + rxe.fix());
        Finding loaded = only(Diagnosis.of(with(none, JDK25, true, null, List.of(), -1, false, "loaded", "absent", "rdma")), "Soft-RoCE");
        assertTrue(loaded.fix().startsWith("as root: rdma link add rxe0") && !loaded.fix().contains("iproute2"), loaded.fix());
        Finding siw = only(Diagnosis.of(with(none, JDK25, true, null, List.of(), -1, false, "absent", "available", "rdma")), "Soft-iWARP");
        assertTrue(siw.fix().contains("modprobe siw && rdma link add siw0 type siw netdev eth1"), siw.fix());
        Finding neither = only(Diagnosis.of(with(none, JDK25, true, null, List.of(), -1, false, "absent", "absent", "rdma")), "Soft-RoCE");
        assertTrue(neither.fix().contains("scripts/softroce-vm"), neither.fix());
    }

    @Test
    void procFilesAreReadAsTheKernelWritesThem() {
        String limits = """
                Limit                     Soft Limit           Hard Limit           Units
                Max locked memory         8388608              8388608              bytes
                """;
        assertEquals(8388608, EnvironmentFacts.memlockSoft(limits));
        assertEquals(-1, EnvironmentFacts.memlockSoft("Max locked memory         unlimited            unlimited            bytes\n"));
        assertEquals(-2, EnvironmentFacts.memlockSoft("Max open files 1024 1024 files\n"));
        String status = "Name:\tjava\nVmLck:\t       4 kB\nVmPin:\t    4096 kB\nCapEff:\t0000000000004000\n";
        assertEquals(4100L * 1024, EnvironmentFacts.pinned(status));
        assertTrue(EnvironmentFacts.capability(status, 14));
        assertFalse(EnvironmentFacts.capability("CapEff:\t0000000000000000\n", 14));
        assertEquals("10.77.0.1", dev.jrdma.device.GidInfo.ipAddress(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff,
            10, 77, 0, 1}).getHostAddress());
        assertEquals(null, dev.jrdma.device.GidInfo.ipAddress(new byte[16]));
    }
}
