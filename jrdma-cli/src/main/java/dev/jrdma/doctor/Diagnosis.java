package dev.jrdma.doctor;

import dev.jrdma.doctor.EnvironmentFacts.Device;
import dev.jrdma.doctor.EnvironmentFacts.Gid;
import dev.jrdma.doctor.EnvironmentFacts.Port;
import dev.jrdma.doctor.Finding.Level;

import java.net.Inet4Address;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * What {@code jrdma doctor} concludes from {@link EnvironmentFacts}: one {@link Finding} per
 * check, each with the fix a user would otherwise look up by hand. Only a JDK older than 25 is
 * a failure: without RDMA (libraries, device, port) jrdma still runs on its software providers,
 * so those are warnings that say what real RDMA needs.
 */
public final class Diagnosis {
    /** Below this, RLIMIT_MEMLOCK is worth a warning where verbs can be used: the pool pins 4 MiB chunks. */
    static final long MEMLOCK_WARN_BELOW = 64L << 20;

    private Diagnosis() {
    }

    public static List<Finding> of(EnvironmentFacts f) {
        List<Finding> out = new ArrayList<>();
        jdk(f, out);
        nativeAccess(f, out);
        boolean verbs = libraries(f, out);
        if (verbs) {
            devices(f, out);
        }
        memlock(f, out, verbs && !f.devices().isEmpty());
        if (f.devices().isEmpty()) {
            softRoce(f, out);
        }
        hugePages(f, out);
        out.add(new Finding(Level.INFO, "provider", "the default provider, auto, chooses "
                + f.autoChoice().replaceFirst("^auto: ", ""), ""));
        return out;
    }

    private static void jdk(EnvironmentFacts f, List<Finding> out) {
        if (f.jdkVersion().feature() < 25) {
            out.add(new Finding(Level.FAIL, "JDK", f.jdkVersion() + ": jrdma needs Java 25 or newer",
                    "install a JDK 25 (Temurin: apt-get install temurin-25-jdk from packages.adoptium.net) and point JAVA_HOME at it"));
        } else {
            out.add(Finding.ok("JDK", f.jdkVersion().toString()));
        }
    }

    private static void nativeAccess(EnvironmentFacts f, List<Finding> out) {
        if (f.nativeAccess()) {
            out.add(Finding.ok("native access", "enabled for jrdma (java.lang.foreign downcalls run without warnings)"));
        } else {
            out.add(new Finding(Level.WARN, "native access", "not enabled for jrdma: the JDK warns at its first native call,"
                    + " and a future JDK will refuse it",
                    "run java with --enable-native-access=ALL-UNNAMED (class path) or --enable-native-access=dev.jrdma"
                            + " (module path), or add 'Enable-Native-Access: ALL-UNNAMED' to an executable jar's manifest"));
        }
    }

    /** Whether libibverbs and librdmacm load. */
    private static boolean libraries(EnvironmentFacts f, List<Finding> out) {
        if (f.librariesError() == null) {
            out.add(Finding.ok("RDMA libraries", "libibverbs and librdmacm load"));
            return true;
        }
        out.add(new Finding(Level.WARN, "RDMA libraries", f.librariesError() + "; real RDMA (verbs) is unavailable, the"
                + " software providers (shm, tcp) still work",
                "apt-get install libibverbs1 librdmacm1 ibverbs-providers (Debian/Ubuntu; rdma-core on RHEL/Fedora)"));
        return false;
    }

    private static void devices(EnvironmentFacts f, List<Finding> out) {
        List<String> locked = f.deviceNodes().stream().filter(n -> n.endsWith("(no access)")).toList();
        if (!locked.isEmpty()) {
            out.add(new Finding(Level.WARN, "device nodes", "no read/write access to /dev/infiniband/" + String.join(", ", locked),
                    "add the user to the group owning them (often 'rdma'), or install rdma-core's udev rules"));
        }
        if (f.devicesError() != null) {
            out.add(new Finding(Level.WARN, "devices", "listing RDMA devices failed: " + f.devicesError(),
                    "check /dev/infiniband and that the kernel's RDMA modules are loaded (ib_uverbs)"));
            return;
        }
        if (f.devices().isEmpty()) {
            out.add(new Finding(Level.WARN, "devices", "no RDMA device (ibv_get_device_list lists none); auto uses the"
                    + " software providers", "see 'Soft-RoCE' below, or install the NIC's driver"));
            return;
        }
        for (Device d : f.devices()) {
            for (Port p : d.ports()) {
                String where = d.name() + " port " + p.port();
                if (p.active()) {
                    out.add(Finding.ok(where, p.state() + ", " + p.linkLayer() + ", active MTU " + p.activeMtuBytes()));
                } else {
                    out.add(new Finding(Level.WARN, where, p.state() + ", " + p.linkLayer() + ": connections cannot use it",
                            p.linkLayer().startsWith("Ethernet") ? "bring its network interface up (ip link set NETDEV up) and check the link"
                                    : "check the cable, and that a subnet manager (opensm) runs on the fabric"));
                }
                gids(where, p, out);
            }
        }
    }

    private static void gids(String where, Port p, List<Finding> out) {
        if (p.gids().isEmpty()) {
            out.add(new Finding(Level.WARN, where + " GIDs", "the GID table is empty", "give the port's network interface an address"));
            return;
        }
        String table = p.gids().stream().map(g -> g.index() + ": " + g.text() + " " + g.type()
                + (g.netdev() != null ? " on " + g.netdev() : "")).collect(Collectors.joining("; "));
        out.add(new Finding(Level.INFO, where + " GIDs", table, ""));
        if (!p.linkLayer().startsWith("Ethernet")) {
            return;
        }
        Gid v2 = null;
        for (Gid g : p.gids()) {
            if (g.address() instanceof Inet4Address && g.type().contains("v2")) {
                v2 = g;
                break;
            }
        }
        if (v2 == null) {
            out.add(new Finding(Level.WARN, where + " GIDs", "no RoCE v2 GID with an IPv4 address: rdma_cm over IPv4 cannot use"
                    + " this port", "give its network interface an IPv4 address (ip addr add ADDRESS/PREFIX dev NETDEV)"));
        } else {
            out.add(new Finding(Level.INFO, where + " GID index", "connections to or from " + v2.address().getHostAddress()
                    + " use GID " + v2.index() + " (RoCE v2); for perftest that is -x " + v2.index()
                    + ", and 'jrdma perf -x " + v2.index() + "' serves on that address", ""));
        }
    }

    private static void memlock(EnvironmentFacts f, List<Finding> out, boolean verbs) {
        String topic = "memlock";
        if (f.ipcLock()) {
            out.add(Finding.ok(topic, "CAP_IPC_LOCK is effective: registered memory is not limited"));
            return;
        }
        if (f.memlockSoft() == -1) {
            out.add(Finding.ok(topic, "RLIMIT_MEMLOCK is unlimited"));
            return;
        }
        if (f.memlockSoft() < 0) {
            out.add(new Finding(Level.INFO, topic, "RLIMIT_MEMLOCK could not be read (/proc/self/limits)", ""));
            return;
        }
        long left = Math.max(0, f.memlockSoft() - f.pinnedBytes());
        String found = "RLIMIT_MEMLOCK is " + mib(f.memlockSoft()) + ", " + mib(f.pinnedBytes()) + " pinned already: "
                + mib(left) + " more can be registered on an RDMA device";
        String fix = "'ulimit -l unlimited' in the shell that starts java, LimitMEMLOCK=infinity for a systemd service,"
                + " '* - memlock unlimited' in /etc/security/limits.conf, or --ulimit memlock=-1 for a container";
        if (f.memlockSoft() < MEMLOCK_WARN_BELOW) {
            out.add(new Finding(verbs ? Level.WARN : Level.INFO, topic, found + " (the pool registers 4 MiB chunks;"
                    + " beyond the limit ibv_reg_mr fails with ENOMEM)" + (verbs ? "" : "; only real RDMA devices pin memory"), fix));
        } else {
            out.add(Finding.ok(topic, found));
        }
    }

    private static void softRoce(EnvironmentFacts f, List<Finding> out) {
        String netdev = f.netdevs().isEmpty() ? "eth0" : f.netdevs().get(0);
        String tool = f.rdmaTool() != null ? "" : " (the 'rdma' command is iproute2's: apt-get install iproute2)";
        if (!f.rxe().equals("absent")) {
            out.add(new Finding(Level.INFO, "Soft-RoCE", "the kernel's rdma_rxe module is " + f.rxe()
                    + ": a Soft-RoCE device gives real verbs over an ordinary network interface",
                    "as root: " + (f.rxe().equals("loaded") ? "" : "modprobe rdma_rxe && ") + "rdma link add rxe0 type rxe netdev "
                            + netdev + tool));
        } else if (!f.siw().equals("absent")) {
            out.add(new Finding(Level.INFO, "Soft-iWARP", "the kernel's siw module is " + f.siw()
                    + " (no rdma_rxe): a soft iWARP device gives real verbs over TCP",
                    "as root: " + (f.siw().equals("loaded") ? "" : "modprobe siw && ") + "rdma link add siw0 type siw netdev "
                            + netdev + tool));
        } else {
            out.add(new Finding(Level.INFO, "Soft-RoCE", "this kernel has neither rdma_rxe nor siw (or a container hides"
                    + " /lib/modules)", "scripts/softroce-vm runs a command in a VM with two Soft-RoCE devices (rxe0, rxe1)"));
        }
    }

    private static void hugePages(EnvironmentFacts f, List<Finding> out) {
        if (f.hugePagesTotal() < 0) {
            return;
        }
        if (f.hugePagesTotal() == 0) {
            out.add(new Finding(Level.INFO, "huge pages", "none reserved: Rdma.Builder.hugePages(true) falls back to 4 KiB pages",
                    "as root: sysctl vm.nr_hugepages=N (N pages of " + f.hugePageKb() + " kB), if you want them"));
        } else {
            out.add(Finding.ok("huge pages", f.hugePagesTotal() + " of " + f.hugePageKb()
                    + " kB reserved, for Rdma.Builder.hugePages(true)"));
        }
    }

    private static String mib(long bytes) {
        return bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? (bytes >> 20) + " MiB" : bytes >= 1024 ? (bytes >> 10) + " KiB"
                : bytes + " bytes";
    }
}
