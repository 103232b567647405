package dev.jrdma.cli;

import java.io.PrintStream;
import java.util.Arrays;

/** Entry point of the {@code jrdma} command. */
public final class Main {
    static final String USAGE = """
            usage: jrdma <command> [options]

            commands:
              devices [-v] [-d NAME]   RDMA devices, ports, GIDs and capabilities (like ibv_devinfo)
              perf TEST [options]      perftest's tests (write_lat ... atomic_bw) on jrdma; 'jrdma perf' for its options
              doctor                   checks this machine (JDK, native access, devices, GIDs, memlock) and says what to fix
              help                     this text
            """;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs a command; returns the exit code (0 ok, 1 failure, 2 usage). */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help") || args[0].equals("-h")) {
            (args.length == 0 ? err : out).print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        return switch (args[0]) {
            case "devices" -> DevicesCommand.run(rest, out, err);
            case "perf" -> dev.jrdma.perf.PerfCommand.run(rest, out, err);
            case "doctor" -> dev.jrdma.doctor.DoctorCommand.run(rest, out, err);
            default -> {
                err.println("jrdma: unknown command '" + args[0] + "'");
                err.print(USAGE);
                yield 2;
            }
        };
    }
}
