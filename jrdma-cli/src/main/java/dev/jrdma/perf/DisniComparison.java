package dev.jrdma.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * jrdma against DiSNI (and perftest, the C reference) in one Soft-RoCE VM boot, the way issue 24
 * compared them: read_lat and send_lat at 64 bytes, 2 000 timed iterations after 50 000 untimed
 * ones for the Java tools, server on rxe0 and client on rxe1, several rounds with the order of
 * the tools rotated, medians of t_typical. DiSNI's side is scripts/lib/DisniLatency.java, run from
 * source against DiSNI's jar on the JDKs given. A Java run that crashes (the emulator's
 * cross-modifying code, see scripts/softroce-vm) is run again, up to {@link #CRASH_RETRIES} times,
 * and counted. Writes a Markdown report.
 *
 * <pre>DisniComparison OUT.md ROUNDS DISNI_CLASSPATH LIBDISNI_DIR DISNI_SOURCE JDK_HOME...</pre>
 */
public final class DisniComparison {
    static final String[] TESTS = {"read_lat", "send_lat"};
    static final int SIZE = 64, ITERATIONS = 2000, WARM_UP = 50_000, CRASH_RETRIES = 3;
    static final long RUN_SECONDS = 600;

    /**
     * One tool: its label, how to start its server and client, and what its server prints once it
     * listens (null: none can be waited for, as perftest's stdout is buffered; then the client is
     * started again while it finds no server).
     */
    record Tool(String label, String ready, Runner runner) {
    }

    interface Runner {
        List<List<String>> commands(String test, int port);   // [server, client]
    }

    /** One run's outcome: t_typical in us (NaN: none), rxe's retries meanwhile, the crashed runs before it. */
    record Outcome(double typical, long retries, int crashes) {
    }

    private DisniComparison() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]);
        String disniCp = args[2], libdisni = args[3], disniSource = args[4];
        PerftestComparison.VmPair vm = PerftestComparison.VmPair.fromEnvironment();
        String dev0 = vm.dev0(), dev1 = vm.dev1(), ip = vm.ip(), gid = vm.gid();
        String java = ProcessHandle.current().info().command().orElseThrow();
        String cp = System.getProperty("java.class.path");
        List<Tool> tools = new ArrayList<>();
        tools.add(new Tool("perftest", null, (t, port) -> {
            List<String> common = List.of("-x", gid, "-s", String.valueOf(SIZE), "-n", String.valueOf(ITERATIONS),
                    "-p", String.valueOf(port), "-F");
            return List.of(concat(List.of("ib_" + t, "-d", dev0), common),
                    concat(concat(List.of("ib_" + t, "-d", dev1), common), List.of(ip)));
        }));
        for (int i = 5; i < args.length; i++) {
            String jdk = args[i];
            String label = "DiSNI on JDK " + Runtime.Version.parse(javaVersion(jdk)).feature();
            tools.add(new Tool(label, "server listening", (t, port) -> {
                List<String> j = List.of(jdk + "/bin/java", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
                        "-Djava.library.path=" + libdisni, "-cp", disniCp, disniSource);
                List<String> tail = List.of(t, ip, String.valueOf(port), String.valueOf(SIZE), String.valueOf(ITERATIONS),
                        String.valueOf(WARM_UP));
                return List.of(concat(concat(j, List.of("server")), tail), concat(concat(j, List.of("client")), tail));
            }));
        }
        tools.add(new Tool("jrdma", "server waiting on", (t, port) -> {
            List<String> jp = List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp, "dev.jrdma.cli.Main", "perf", t,
                    "--provider", "verbs", "-s", String.valueOf(SIZE), "-n", String.valueOf(ITERATIONS), "-p", String.valueOf(port));
            // -u cm: rdma_cm's ack timeout, as DiSNI has (and jrdma's ConnectionConfig by default), not
            // perftest's 67 ms. The warm-up is jrdma perf's own, until the figure settles with the JIT
            // idle: under the emulated CPU 50 000 iterations leave C2 still compiling jrdma's path.
            jp = concat(jp, List.of("-u", "cm"));
            return List.of(concat(jp, List.of("-d", dev0, "--bind", ip)), concat(jp, List.of("-d", dev1, "--csv", ip)));
        }));
        Outcome[][][] got = new Outcome[TESTS.length][tools.size()][rounds];
        int port = 21000;
        long began = System.nanoTime();
        // The first JVM runs of a fresh VM are slow whatever they run (jrdma's read_lat measured 143
        // and 162 us first, 79 to 84 after): one untimed run of each tool before the rounds.
        for (Tool t : tools) {
            List<List<String>> cmd = t.runner().commands(TESTS[0], ++port);
            Run first = run(cmd.get(0), cmd.get(1), t.ready());
            double v = parse(first.clientOutput, TESTS[0]);
            System.err.println("untimed first run of " + t.label() + ": " + v + " us"
                    + (Double.isNaN(v) ? (first.crashed ? " (a JVM crashed)" : "; its client said:\n" + first.clientOutput) : ""));
        }
        for (int r = 0; r < rounds; r++) {
            for (int ti = 0; ti < TESTS.length; ti++) {
                for (int k = 0; k < tools.size(); k++) {
                    int tool = (k + r) % tools.size();   // rotated, round by round
                    Outcome o = null;
                    int crashes = 0;
                    while (o == null) {
                        port++;
                        List<List<String>> cmd = tools.get(tool).runner().commands(TESTS[ti], port);
                        long before = PerftestComparison.retries(dev0, dev1);
                        Run run = run(cmd.get(0), cmd.get(1), tools.get(tool).ready());
                        long after = PerftestComparison.retries(dev0, dev1);
                        if (run.crashed && crashes < CRASH_RETRIES) {
                            crashes++;
                            System.err.println("crashed, run again: " + String.join(" ", cmd.get(1)));
                            continue;
                        }
                        o = new Outcome(parse(run.clientOutput, TESTS[ti]), before < 0 || after < 0 ? -1 : after - before, crashes);
                        if (Double.isNaN(o.typical())) {
                            System.err.println("no result from " + String.join(" ", cmd.get(1)) + ":\n" + run.clientOutput
                                    + "\nits server said:\n" + run.serverOutput);
                        }
                    }
                    got[ti][tool][r] = o;
                    System.err.printf(Locale.ROOT, "round %d %-9s %-16s %s%n", r + 1, TESTS[ti], tools.get(tool).label(), o);
                }
            }
            write(out, tools, got, r + 1, rounds, dev0, dev1, (System.nanoTime() - began) / 60e9);
        }
    }

    private static String javaVersion(String jdk) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(jdk + "/bin/java", "-XshowSettings:properties", "-version").redirectErrorStream(true).start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        p.waitFor();
        for (String line : said.split("\n")) {
            if (line.trim().startsWith("java.specification.version = ")) {
                return line.trim().substring("java.specification.version = ".length());
            }
        }
        throw new IOException("cannot tell the version of " + jdk + ":\n" + said);
    }

    record Run(String clientOutput, String serverOutput, boolean crashed) {
    }

    /**
     * The server, then the client (again while the server does not listen yet); both bounded.
     * Crashed: either JVM died of a fatal error (hs_err) rather than reporting.
     */
    static Run run(List<String> server, List<String> client, String ready) throws Exception {
        Path sOut = Files.createTempFile("jrdma-disni-server", ".out"), cOut = Files.createTempFile("jrdma-disni-client", ".out");
        Process s = new ProcessBuilder(server).redirectErrorStream(true).redirectOutput(sOut.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(15);
            String said = "";
            if (ready != null) {   // a JVM takes many seconds to start under the emulated CPU
                long readyBy = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
                while (s.isAlive() && System.nanoTime() < readyBy
                        && !Files.readString(sOut, StandardCharsets.ISO_8859_1).contains(ready)) {
                    Thread.sleep(100);
                }
            }
            for (int attempt = 0; attempt < 60 && System.nanoTime() < deadline; attempt++) {
                Thread.sleep(attempt == 0 ? (ready == null ? 2000 : 200) : 500);
                Process p = new ProcessBuilder(client).redirectErrorStream(true).redirectOutput(cOut.toFile()).start();
                if (!p.waitFor(RUN_SECONDS, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor();
                }
                said = Files.readString(cOut, StandardCharsets.ISO_8859_1);
                String lower = said.toLowerCase(Locale.ROOT);
                boolean notListening = lower.contains("refused") || said.contains("Couldn't connect") || said.contains("connecting to")
                        || lower.contains("rejected");
                if (!notListening || !s.isAlive()) {
                    break;
                }
            }
            s.waitFor(30, TimeUnit.SECONDS);
            String serverSaid = Files.readString(sOut, StandardCharsets.ISO_8859_1);
            return new Run(said, serverSaid, crashed(said) || crashed(serverSaid));
        } finally {
            s.destroy();
            if (!s.waitFor(10, TimeUnit.SECONDS)) {
                s.destroyForcibly();
            }
            Files.deleteIfExists(sOut);
            Files.deleteIfExists(cOut);
        }
    }

    static boolean crashed(String output) {
        return output.contains("A fatal error has been detected by the Java Runtime Environment");
    }

    /** t_typical in us from perftest's result row, DiSNI's line or jrdma perf's CSV row; NaN when none. */
    static double parse(String output, String test) {
        List<String> lines = List.of(output.split("\n"));
        double v = PerftestComparison.parsePerftest(lines, new PerftestComparison.Case(test, SIZE, ITERATIONS))[0];
        if (!Double.isNaN(v)) {
            return v;
        }
        v = PerftestComparison.parseJrdma(lines, new PerftestComparison.Case(test, SIZE, ITERATIONS))[0];
        if (!Double.isNaN(v)) {
            return v;
        }
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 5 && f[0].equals("disni") && f[1].equals(test) && f[3].equals("t_typical_us")) {
                return Double.parseDouble(f[4]);
            }
        }
        return Double.NaN;
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> l = new ArrayList<>(a);
        l.addAll(b);
        return l;
    }

    static void write(Path out, List<Tool> tools, Outcome[][][] got, int done, int rounds, String dev0, String dev1,
                      double minutes) throws IOException {
        int jrdma = tools.size() - 1;
        StringBuilder md = new StringBuilder("# jrdma against DiSNI\n\n");
        md.append("Generated by `scripts/bench-vs-disni` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
                .append(" (").append(PerftestComparison.machine()).append("; QEMU TCG ")
                .append(System.getenv().getOrDefault("SOFTROCE_VM_TCG_THREAD", "single")).append("-threaded): ")
                .append("server on ").append(dev0).append(", client on ").append(dev1).append(", ").append(SIZE).append(" B, ")
                .append(ITERATIONS).append(" timed iterations, after ").append(String.format(Locale.ROOT, "%,d", WARM_UP))
                .append(" untimed for DiSNI and jrdma perf's own warm-up for jrdma (untimed rounds until the figure holds within 5%\n")
                .append("with the JIT idle, at most 60 s: under the emulated CPU, 50 000 leave C2 still compiling jrdma's path); ").append(done).append(" of ").append(rounds).append(" rounds")
                .append(done < rounds ? " (cut short)" : "").append(String.format(Locale.ROOT, " in %.0f min", minutes))
                .append(", the tools' order rotated each round; medians of t_typical (read_lat: the read's round trip; send_lat: half\n")
                .append("the ping-pong's), in us. DiSNI 2.1 (its jar from Maven Central, its libdisni built from its v2.1 source) runs\n")
                .append("`scripts/lib/DisniLatency.java`: DiSNI's passive endpoint group, stateful verb calls, a busy-polled CQ, as\n")
                .append("DiSNI's own benchmarks; with retry_count 7 (DiSNI's default is 0: one retransmission fails the run). perftest\n")
                .append("runs with its defaults (ack timeout 2^14 x 4.096 us = 67 ms), DiSNI and jrdma (`-u cm`) with rdma_cm's.\n\n");
        md.append("| test |");
        for (Tool t : tools) {
            md.append(' ').append(t.label()).append(" |");
        }
        for (int k = 1; k < jrdma; k++) {
            md.append(" jrdma / ").append(tools.get(k).label()).append(" |");
        }
        md.append(" target | met |\n|---|");
        md.append("---:|".repeat(tools.size() + jrdma - 1)).append("---|---|\n");
        for (int ti = 0; ti < TESTS.length; ti++) {
            md.append("| ").append(TESTS[ti]).append(" |");
            double[] med = new double[tools.size()];
            for (int k = 0; k < tools.size(); k++) {
                med[k] = PerftestComparison.median(Arrays.stream(got[ti][k]).limit(done).mapToDouble(o -> o == null ? Double.NaN : o.typical()).toArray());
                md.append(String.format(Locale.ROOT, " %.2f |", med[k]));
            }
            boolean met = jrdma > 1;
            for (int k = 1; k < jrdma; k++) {
                double ratio = med[jrdma] / med[k];
                met &= ratio < 1.0;
                md.append(String.format(Locale.ROOT, " %.2f |", ratio));
            }
            md.append(" jrdma / DiSNI < 1.00 | ").append(met ? "yes" : "**no**").append(" |\n");
        }
        md.append("\nEvery round: t_typical, then in brackets rxe's transport retries during the run (`completer_retry_err` of\n")
                .append("both devices; target: perftest's level, at most 1 per run) and, after a `+`, how many times the run was\n")
                .append("started again because a JVM crashed:\n\n| test | tool | rounds |\n|---|---|---|\n");
        for (int ti = 0; ti < TESTS.length; ti++) {
            for (int k = 0; k < tools.size(); k++) {
                StringBuilder b = new StringBuilder();
                for (int r = 0; r < done; r++) {
                    Outcome o = got[ti][k][r];
                    b.append(r == 0 ? "" : ", ").append(o == null || Double.isNaN(o.typical()) ? "-"
                            : String.format(Locale.ROOT, "%.2f", o.typical()));
                    if (o != null) {
                        b.append(" (").append(o.retries()).append(o.crashes() > 0 ? " +" + o.crashes() : "").append(')');
                    }
                }
                md.append("| ").append(TESTS[ti]).append(" | ").append(tools.get(k).label()).append(" | ").append(b).append(" |\n");
            }
        }
        Path notes = out.toAbsolutePath().getParent().resolve("vs-disni-notes.md");
        if (Files.exists(notes)) {
            md.append("\n").append(Files.readString(notes));
        }
        Files.writeString(out, md);
        System.out.print(md);
    }
}
