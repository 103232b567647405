package dev.jrdma.doctor;

import java.io.PrintStream;
import java.util.List;

/**
 * {@code jrdma doctor}: checks what a user would otherwise debug by hand (JDK, native access,
 * RDMA libraries, devices and port states, the GID table and which index an address uses,
 * RLIMIT_MEMLOCK, whether Soft-RoCE or siw could be added, huge pages, the default provider)
 * and prints what to fix. Exit code 1 when something stops jrdma from running, else 0.
 */
public final class DoctorCommand {
    private DoctorCommand() {
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length > 0) {
            if (args.length == 1 && (args[0].equals("-h") || args[0].equals("--help"))) {
                out.println("usage: jrdma doctor    (checks this machine for jrdma and says what to fix)");
                return 0;
            }
            err.println("jrdma doctor: it takes no options, not " + String.join(" ", args) + " (usage: jrdma doctor)");
            return 2;
        }
        List<Finding> findings = Diagnosis.of(EnvironmentFacts.gather());
        print(findings, out);
        return findings.stream().anyMatch(f -> f.level() == Finding.Level.FAIL) ? 1 : 0;
    }

    static void print(List<Finding> findings, PrintStream out) {
        int warn = 0, fail = 0;
        for (Finding f : findings) {
            out.printf("[%-4s] %s: %s%n", f.level().tag(), f.topic(), f.found());
            if (!f.fix().isEmpty()) {
                out.println("       fix: " + f.fix());
            }
            warn += f.level() == Finding.Level.WARN ? 1 : 0;
            fail += f.level() == Finding.Level.FAIL ? 1 : 0;
        }
        out.println(findings.size() + " checks: " + fail + " failed, " + warn + " warnings"
                + (fail == 0 ? (warn == 0 ? "; all is well" : "; jrdma runs (see the warnings for real RDMA)") : "; jrdma cannot run here"));
    }
}
