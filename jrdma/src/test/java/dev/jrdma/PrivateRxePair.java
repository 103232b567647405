package dev.jrdma;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A Soft-RoCE pair of a test's own, beside the VM's rxe0/rxe1: a veth pair (vethlf0, vethlf1),
 * an address on each end (10.78.0.1, 10.78.0.2), rxe devices on them (rxelf0, rxelf1) and the
 * same policy routing scripts/vm/guest gives the suite's pair, so that traffic between the two
 * addresses crosses the veth pair instead of lo. A test that takes a link down does it here: what
 * a flap leaves behind then stays on devices that are deleted afterwards.
 *
 * <p>Plain Java, no JUnit: the child JVM that opens the devices runs it too (librdmacm keeps a
 * device open until its process ends, and only then can the device be deleted).
 */
final class PrivateRxePair {
    static final String NETDEV0 = "vethlf0", NETDEV1 = "vethlf1", DEV0 = "rxelf0", DEV1 = "rxelf1";
    static final String IP0 = "10.78.0.1", IP1 = "10.78.0.2";
    private static final String MAC0 = "02:00:0a:4e:00:01", MAC1 = "02:00:0a:4e:00:02";
    /** Routing tables and rule preferences of their own (the guest's are 101/102 and 100-103). */
    private static final String TABLE0 = "111", TABLE1 = "112";
    private static final List<String> PREFS = List.of("110", "111", "112", "113");

    private PrivateRxePair() {
    }

    /** Makes the pair and waits (60 s at most) for both ports to be ACTIVE with their IPv4 GIDs. */
    static void create() throws Exception {
        delete();
        Shell.run("ip", "link", "add", NETDEV0, "address", MAC0, "type", "veth", "peer", "name", NETDEV1, "address", MAC1);
        Shell.run("ip", "addr", "add", IP0 + "/24", "dev", NETDEV0);
        Shell.run("ip", "addr", "add", IP1 + "/24", "dev", NETDEV1);
        Shell.run("ip", "link", "set", NETDEV0, "up");
        Shell.run("ip", "link", "set", NETDEV1, "up");
        routes();
        // From one end to the other through the veth pair, as scripts/vm/guest explains for 10.77.0.0/24.
        Shell.run("ip", "rule", "add", "pref", PREFS.get(0), "iif", "lo", "from", IP1, "to", IP0, "lookup", TABLE0);
        Shell.run("ip", "rule", "add", "pref", PREFS.get(1), "iif", "lo", "from", IP0, "to", IP1, "lookup", TABLE1);
        Shell.run("ip", "rule", "add", "pref", PREFS.get(2), "iif", "lo", "from", "0.0.0.0/32", "to", IP0, "lookup", TABLE0);
        Shell.run("ip", "rule", "add", "pref", PREFS.get(3), "iif", "lo", "from", "0.0.0.0/32", "to", IP1, "lookup", TABLE1);
        Shell.run("rdma", "link", "add", DEV0, "type", "rxe", "netdev", NETDEV0);
        Shell.run("rdma", "link", "add", DEV1, "type", "rxe", "netdev", NETDEV1);
        String why = awaitActive(60_000);
        if (why != null) {
            throw new IllegalStateException("the private rxe pair did not come up within 60 s: " + why);
        }
    }

    /**
     * The routes and static neighbours through the pair. Setting a link down removes the routes
     * through it and its neighbour entries, and setting it up does not bring them back (Linux);
     * what manages a real network puts them back, and so does a test that takes a link down.
     */
    static void routes() throws Exception {
        Shell.run("ip", "route", "replace", IP0, "dev", NETDEV1, "src", IP1, "table", TABLE0);
        Shell.run("ip", "route", "replace", IP1, "dev", NETDEV0, "src", IP0, "table", TABLE1);
        Shell.run("ip", "neigh", "replace", IP0, "lladdr", MAC0, "dev", NETDEV1, "nud", "permanent");
        Shell.run("ip", "neigh", "replace", IP1, "lladdr", MAC1, "dev", NETDEV0, "nud", "permanent");
    }

    /** What the kernel has now for the pair's routes and neighbours, for a report. */
    static String describeRoutes() throws Exception {
        return ("table " + TABLE0 + ": [" + Shell.output("ip", "route", "show", "table", TABLE0) + "] table " + TABLE1
                + ": [" + Shell.output("ip", "route", "show", "table", TABLE1) + "] neighbours: ["
                + Shell.output("ip", "neigh", "show", "dev", NETDEV1) + "; " + Shell.output("ip", "neigh", "show", "dev", NETDEV0)
                + "]").replace('\n', ' ');
    }

    /** Null once both ports are ACTIVE and their GID index 1 is the end's IPv4 address, else what is not (after {@code millis}). */
    static String awaitActive(long millis) throws Exception {
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (true) {
            String why = notActive();
            if (why == null || System.nanoTime() > deadline) {
                return why;
            }
            Thread.sleep(100);   // sysfs has no change notification to wait on
        }
    }

    private static String notActive() throws Exception {
        for (String[] d : new String[][] {{DEV0, IP0}, {DEV1, IP1}}) {
            Path port = Path.of("/sys/class/infiniband", d[0], "ports", "1");
            String state = Files.exists(port.resolve("state")) ? Files.readString(port.resolve("state")).strip() : "absent";
            if (!state.contains("ACTIVE")) {
                return d[0] + " port state " + state;
            }
            String[] o = d[1].split("\\.");
            String want = String.format("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", Integer.parseInt(o[0]),
                    Integer.parseInt(o[1]), Integer.parseInt(o[2]), Integer.parseInt(o[3]));
            Path gid = port.resolve("gids/1");
            String got = Files.exists(gid) ? Files.readString(gid).strip() : "absent";
            if (!got.equals(want)) {
                return d[0] + " GID index 1 is " + got + ", not " + want;
            }
        }
        return null;
    }

    /** Removes the pair, its rules and devices; what is not there is not an error. */
    static void delete() throws Exception {
        for (String pref : PREFS) {
            Shell.tryRun(30, "ip", "rule", "del", "pref", pref);
        }
        Shell.tryRun(60, "rdma", "link", "delete", DEV0);
        Shell.tryRun(60, "rdma", "link", "delete", DEV1);
        Shell.tryRun(30, "ip", "link", "del", NETDEV0);   // its peer, routes and neighbours with it
    }
}
