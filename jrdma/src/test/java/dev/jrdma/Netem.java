package dev.jrdma;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;

/**
 * Packet faults on the Soft-RoCE VM's veth pair ({@code JRDMA_VM_NETDEV0/1}, set by
 * scripts/softroce-vm): Linux's netem queueing discipline on the egress of both ends, so that
 * rxe's RoCEv2 packets in both directions are dropped, reordered, duplicated or delayed as asked.
 * rxe is a real RC implementation (PSNs, NAKs, an ack timer, retransmission), so this is what a
 * lossy fabric does to a connection.
 */
final class Netem {
    private Netem() {
    }

    /** The two ends of the veth pair the suite's rxe0 and rxe1 sit on. */
    static List<String> netdevs() {
        List<String> out = new ArrayList<>();
        for (String name : List.of("JRDMA_VM_NETDEV0", "JRDMA_VM_NETDEV1")) {
            String v = System.getenv(name);
            if (v == null || v.isBlank()) {
                fail("the fault tests need " + name + " (set by scripts/softroce-vm: the netdevs under the rxe devices, "
                        + "whose packets netem impairs): run them with scripts/verbs-suite");
            }
            out.add(v);
        }
        return out;
    }

    /** {@code tc qdisc replace dev D root netem ARGS} on both ends, e.g. {@code "loss", "5%"}. */
    static void apply(String... args) throws Exception {
        run("modprobe", "sch_netem");
        for (String dev : netdevs()) {
            List<String> cmd = new ArrayList<>(List.of("tc", "qdisc", "replace", "dev", dev, "root", "netem"));
            cmd.addAll(List.of(args));
            run(cmd.toArray(String[]::new));
        }
    }

    /** Takes netem off both ends (the default queueing discipline again); no error when there was none. */
    static void clear() throws Exception {
        for (String dev : netdevs()) {
            runAllowingFailure("tc", "qdisc", "del", "dev", dev, "root");
        }
    }

    private static void run(String... cmd) throws Exception {
        Shell.run(cmd);
    }

    private static String runAllowingFailure(String... cmd) throws Exception {
        return Shell.tryRun(30, cmd);
    }
}
