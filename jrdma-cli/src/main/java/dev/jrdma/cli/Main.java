package dev.jrdma.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Entry point of the {@code jrdma} command. */
public final class Main {
    static final String USAGE = """
            usage: jrdma [--log LEVEL] <command> [options]
                   jrdma --version | --help

            commands:
              devices [-v] [-d NAME]   RDMA devices, ports, GIDs and capabilities (like ibv_devinfo)
              perf TEST [options]      perftest's tests (write_lat ... atomic_bw) on jrdma; 'jrdma perf --help' for its options
              doctor                   checks this machine (JDK, native access, devices, GIDs, memlock) and says what to fix
              help                     this text

            --log LEVEL                the library's log records to show, one line each on stderr:
                                       off, error, warning (the default), info, debug or trace
            """;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err, Main::installLogging));
    }

    /** Runs a command with the logging as it is; returns the exit code (0 ok, 1 failure, 2 usage). */
    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, level -> { });
    }

    /** Runs a command; {@code logging} applies the level of the library's log records (--log). */
    static int run(String[] args, PrintStream out, PrintStream err, Consumer<Level> logging) {
        int first = 0;
        Level level = Level.WARNING;
        while (first < args.length && args[first].equals("--log")) {
            if (first + 1 == args.length) {
                err.println("jrdma: --log needs a level (off, error, warning, info, debug or trace)");
                return 2;
            }
            try {
                level = OneLineLogFormat.parse(args[first + 1]);
            } catch (IllegalArgumentException e) {
                err.println("jrdma: " + e.getMessage());
                return 2;
            }
            first += 2;
        }
        logging.accept(level);
        if (first == args.length) {
            err.print(USAGE);
            return 2;
        }
        String command = args[first];
        String[] rest = Arrays.copyOfRange(args, first + 1, args.length);
        return switch (command) {
            case "help", "--help", "-h" -> {
                out.print(USAGE);
                yield 0;
            }
            case "--version", "-V", "version" -> {
                out.println("jrdma " + CliVersion.of() + " (library " + CliVersion.library() + ", Java "
                        + Runtime.version() + ")");
                yield 0;
            }
            case "devices" -> DevicesCommand.run(rest, out, err);
            case "perf" -> dev.jrdma.perf.PerfCommand.run(rest, out, err);
            case "doctor" -> dev.jrdma.doctor.DoctorCommand.run(rest, out, err);
            default -> {
                err.println("jrdma: unknown command '" + command + "'");
                err.print(USAGE);
                yield 2;
            }
        };
    }

    /**
     * The library logs through System.Logger, which goes to java.util.logging: its records are
     * shown on stderr one line each ({@link OneLineLogFormat}), from {@code level} up.
     */
    static void installLogging(Level level) {
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        Handler console = new ConsoleHandler();
        console.setFormatter(new OneLineLogFormat());
        console.setLevel(level);
        root.addHandler(console);
        root.setLevel(level);
    }
}
