package dev.jrdma.doctor;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.Rdma;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

/**
 * What {@code jrdma doctor} looks at, gathered once from this process and machine: the JDK,
 * native access, the RDMA libraries, device nodes, devices with their ports and GID tables, the
 * memlock limit, Soft-RoCE/siw kernel modules, huge pages and the provider {@code auto} picks.
 * A record, so that {@link Diagnosis} can be tested with facts of machines we do not have.
 *
 * @param jdkVersion       Runtime.version()
 * @param nativeAccess     whether the module holding jrdma may call native code without a warning
 * @param librariesError   why libibverbs/librdmacm could not be loaded; null when they were
 * @param deviceNodes      /dev/infiniband entries, each with "(rw)" or "(no access)"; empty when none
 * @param devices          the RDMA devices; empty when none (or the libraries are missing)
 * @param devicesError     why listing the devices failed; null when it did not
 * @param memlockSoft      RLIMIT_MEMLOCK's soft limit in bytes, -1 unlimited, -2 unknown
 * @param pinnedBytes      VmPin + VmLck of this process
 * @param ipcLock          CAP_IPC_LOCK is effective (no limit applies to registrations)
 * @param rxe              the rdma_rxe module: "loaded", "available" (a module file exists), or "absent"
 * @param siw              the siw module: same
 * @param rdmaTool         where iproute2's {@code rdma} is, or null
 * @param netdevs          up, non-loopback network interfaces (for the Soft-RoCE command line)
 * @param hugePagesTotal   HugePages_Total, -1 unknown
 * @param hugePageKb       Hugepagesize in kB
 * @param autoChoice       what the default provider chooses here, and why
 */
public record EnvironmentFacts(Runtime.Version jdkVersion, boolean nativeAccess, String librariesError,
                               List<String> deviceNodes, List<Device> devices, String devicesError, long memlockSoft,
                               long pinnedBytes, boolean ipcLock, String rxe, String siw, String rdmaTool,
                               List<String> netdevs, long hugePagesTotal, long hugePageKb, String autoChoice) {

    /** A device: name and ports. */
    public record Device(String name, List<Port> ports) {
    }

    /** A port: its state (ibv_port_state name), link layer, active MTU in bytes and valid GIDs. */
    public record Port(int port, String state, boolean active, String linkLayer, int activeMtuBytes, List<Gid> gids) {
    }

    /** A GID: index, text, RoCE type, the IP address it stands for (null if none) and its netdev. */
    public record Gid(int index, String text, String type, InetAddress address, String netdev) {
    }

    private static final int CAP_IPC_LOCK = 14;

    /** Looks at this process and machine. */
    public static EnvironmentFacts gather() {
        String libraries = null;
        List<Device> devices = List.of();
        String devicesError = null;
        try {
            devices = Rdma.devices().stream().map(EnvironmentFacts::device).toList();
        } catch (ProviderUnavailableException e) {
            libraries = e.getMessage();
        } catch (RdmaException e) {
            devicesError = e.getMessage();
        }
        String status = read("/proc/self/status");
        String auto;
        try {
            auto = Rdma.autoChoice();
        } catch (RdmaException e) {
            auto = "nothing usable: " + e.getMessage();
        }
        return new EnvironmentFacts(Runtime.version(), Rdma.class.getModule().isNativeAccessEnabled(), libraries,
                listDeviceNodes(), devices, devicesError, memlockSoft(read("/proc/self/limits")), pinned(status),
                capability(status, CAP_IPC_LOCK), module("rdma_rxe", "rxe"), module("siw", "siw"), onPath("rdma"),
                upNetdevs(), meminfo("HugePages_Total"), meminfo("Hugepagesize"), auto);
    }

    private static Device device(DeviceInfo d) {
        List<Port> ports = new ArrayList<>();
        for (PortInfo p : d.ports()) {
            List<Gid> gids = new ArrayList<>();
            for (GidInfo g : p.gids()) {
                InetAddress a = g.ipAddress();
                gids.add(new Gid(g.index(), a == null ? g.text() : a.getHostAddress(), g.typeName(), a,
                        netdev(g.ndevIfindex())));
            }
            String link = p.ethernet() ? "Ethernet (RoCE)" : p.linkLayerName();
            ports.add(new Port(p.port(), p.stateName(), p.active(), link, p.activeMtuBytes(), List.copyOf(gids)));
        }
        return new Device(d.name(), List.copyOf(ports));
    }

    private static String netdev(int ifindex) {
        try {
            NetworkInterface n = ifindex <= 0 ? null : NetworkInterface.getByIndex(ifindex);
            return n == null ? null : n.getName();
        } catch (SocketException e) {
            return null;
        }
    }

    private static List<String> listDeviceNodes() {
        Path dir = Path.of("/dev/infiniband");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().map(p -> p.getFileName() + (Files.isReadable(p) && Files.isWritable(p) ? " (rw)" : " (no access)"))
                    .toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** The soft "Max locked memory" of /proc/self/limits: bytes, -1 unlimited, -2 unknown. */
    static long memlockSoft(String limits) {
        for (String line : limits.split("\n")) {
            if (line.startsWith("Max locked memory")) {
                String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
                if (f.length > 0) {
                    return f[0].equals("unlimited") ? -1 : parse(f[0], -2);
                }
            }
        }
        return -2;
    }

    static long pinned(String status) {
        long kb = 0;
        for (String line : status.split("\n")) {
            if (line.startsWith("VmPin:") || line.startsWith("VmLck:")) {
                kb += parse(line.substring(6).trim().split("\\s+")[0], 0);
            }
        }
        return kb * 1024;
    }

    static boolean capability(String status, int bit) {
        for (String line : status.split("\n")) {
            if (line.startsWith("CapEff:")) {
                try {
                    return (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << bit)) != 0;
                } catch (NumberFormatException e) {
                    return false;
                }
            }
        }
        return false;
    }

    /** "loaded" (in /sys/module), "available" (a module file for the running kernel), or "absent". */
    private static String module(String name, String dirName) {
        if (Files.isDirectory(Path.of("/sys/module", name))) {
            return "loaded";
        }
        String release = read("/proc/sys/kernel/osrelease").trim();
        Path dir = Path.of("/lib/modules", release, "kernel/drivers/infiniband/sw", dirName);
        try (Stream<Path> s = Files.isDirectory(dir) ? Files.list(dir) : Stream.empty()) {
            return s.anyMatch(p -> p.getFileName().toString().startsWith(name + ".ko")) ? "available" : "absent";
        } catch (IOException e) {
            return "absent";
        }
    }

    private static String onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, tool);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        for (String dir : List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin")) {
            Path p = Path.of(dir, tool);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    private static List<String> upNetdevs() {
        List<String> names = new ArrayList<>();
        try {
            for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (n.isUp() && !n.isLoopback()) {
                    names.add(n.getName());
                }
            }
        } catch (SocketException e) {
            return List.of();
        }
        Collections.sort(names);
        return List.copyOf(names);
    }

    private static long meminfo(String key) {
        for (String line : read("/proc/meminfo").split("\n")) {
            if (line.startsWith(key + ":")) {
                return parse(line.substring(key.length() + 1).trim().split("\\s+")[0], -1);
            }
        }
        return -1;
    }

    private static long parse(String s, long otherwise) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file));
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
