package dev.jrdma;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

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

    /** Sets a netdev's link down or up: what a pulled cable or a rebooting switch port does. */
    static void link(String dev, boolean up) throws Exception {
        run("ip", "link", "set", dev, up ? "up" : "down");
    }

    static void run(String... cmd) throws Exception {
        String out = runAllowingFailure(cmd);
        if (out != null) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
        }
    }

    /** Runs {@code cmd}, bounded to 30 s; null when it exited 0, else its output. */
    private static String runAllowingFailure(String... cmd) throws Exception {
        File log = File.createTempFile("netem", ".log");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "did not end within 30 s";
            }
            return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + Files.readString(log.toPath()).strip();
        } finally {
            log.delete();
        }
    }
}
