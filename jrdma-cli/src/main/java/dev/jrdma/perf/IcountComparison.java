package dev.jrdma.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * perftest, DiSNI and jrdma counted instead of timed (issue 46 §0): in a Soft-RoCE VM booted with
 * {@code scripts/softroce-vm --icount}, where the guest's clocks advance one nanosecond per guest
 * instruction, a latency in virtual ns is the number of instructions (user and kernel) on one
 * operation's path. With one vCPU, a test where only the client polls (read_lat, atomic_lat) is
 * exact; the ping-pongs (send_lat, write_lat) run event-driven (perftest's {@code -e}), so that
 * neither side's spinning is counted.
 *
 * <p>Two steps, so that several boots go into one report:
 * <pre>
 * IcountComparison boot OUT.tsv BOOT ROUNDS TESTS DISNI_CLASSPATH LIBDISNI_DIR DISNI_SOURCE   (in the VM)
 * IcountComparison report OUT.md BOOT.tsv...                                                   (anywhere)
 * </pre>
 * TESTS: comma-separated, of read_lat, atomic_lat, send_lat-e, write_lat-e. The DiSNI arguments
 * may be {@code -}: then only perftest and jrdma run. A boot appends one row per run to OUT.tsv:
 * its t_typical (the median iteration; read_lat and atomic_lat: the operation's round trip, the
 * ping-pongs: half of it), t_avg, t_min and t_max in virtual us, and every rxe hardware counter of both
 * devices that moved during the run.
 */
public final class IcountComparison {
    static final int ITERATIONS = 20_000, WARM_UP = 50_000, CRASH_RETRIES = 2;
    /** Two boots (or rounds) agree when every tool's figures for a test are within this of each other. */
    static final double AGREEMENT = 0.01;
    /** The system property naming jrdma variants to run beside it (see {@link #variants}). */
    static final String VARIANTS_PROPERTY = "jrdma.icount.variants";

    /** A test: perftest's name, its size, whether both sides sleep on completion events. */
    record Test(String name, int size, boolean event) {
        static Test of(String spec) {
            boolean event = spec.endsWith("-e");
            String name = event ? spec.substring(0, spec.length() - 2) : spec;
            int size = switch (name) {
                case "read_lat", "send_lat", "write_lat" -> 64;
                case "atomic_lat" -> 8;
                default -> throw new IllegalArgumentException("icount tests: read_lat, atomic_lat, send_lat-e, write_lat-e; not " + spec);
            };
            return new Test(name, size, event);
        }

        String label() {
            return name + (event ? " -e" : "");
        }
    }

    private IcountComparison() {
    }

    public static void main(String[] args) throws Exception {
        switch (args.length > 0 ? args[0] : "") {
            case "boot" -> boot(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                    Stream.of(args[4].split(",")).map(Test::of).toList(), args[5], args[6], args[7]);
            case "report" -> report(Path.of(args[1]), Stream.of(args).skip(2).map(Path::of).toList());
            default -> {
                System.err.println("usage: IcountComparison boot OUT.tsv BOOT ROUNDS TESTS DISNI_CP|- LIBDISNI|- DISNI_SOURCE|-\n"
                        + "       IcountComparison report OUT.md BOOT.tsv...");
                System.exit(2);
            }
        }
    }

    /** One tool: its label, what its server prints once it listens (null: nothing), its commands. */
    record Tool(String label, String ready, Runner runner) {
    }

    interface Runner {
        /** [server, client]; null when the tool does not have the test. */
        List<List<String>> commands(Test test, int port);
    }

    static void boot(Path out, int boot, int rounds, List<Test> tests, String disniCp, String libdisni, String disniSource)
            throws Exception {
        if (!"1".equals(System.getenv("JRDMA_VM_ICOUNT"))) {
            System.err.println("IcountComparison: not in a VM booted with scripts/softroce-vm --icount (JRDMA_VM_ICOUNT is not 1):"
                    + " its figures would be times, not instruction counts");
            System.exit(2);
        }
        PerftestComparison.VmPair vm = PerftestComparison.VmPair.fromEnvironment();
        String dev0 = vm.dev0(), dev1 = vm.dev1(), ip = vm.ip(), gid = vm.gid();
        String java = ProcessHandle.current().info().command().orElseThrow();
        String cp = System.getProperty("java.class.path");
        String n = String.valueOf(ITERATIONS), w = String.valueOf(WARM_UP);
        List<Tool> tools = new ArrayList<>();
        tools.add(new Tool("perftest", null, (t, port) -> {
            List<String> common = new ArrayList<>(List.of("-x", gid, "-n", n, "-p", String.valueOf(port), "-F"));
            if (!t.name().equals("atomic_lat")) {   // ib_atomic_lat moves 8 bytes and takes no -s
                common.addAll(List.of("-s", String.valueOf(t.size())));
            }
            if (t.event()) {
                common.add("-e");
            }
            return List.of(concat(List.of("ib_" + t.name(), "-d", dev0), common),
                    concat(concat(List.of("ib_" + t.name(), "-d", dev1), common), List.of(ip)));
        }));
        if (!disniCp.equals("-")) {
            tools.add(new Tool("DiSNI", "server listening", (t, port) -> {
                // DiSNI 2.1 has no atomics: its post-send serialization (NatIbvSendWR) writes only
                // the rdma part of a work request (remote address and rkey), not compare_add / swap.
                if (t.name().equals("atomic_lat") || t.name().equals("write_lat")) {
                    return null;
                }
                List<String> j = List.of(java, "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
                        "-Djava.library.path=" + libdisni, "-cp", disniCp, disniSource);
                List<String> tail = new ArrayList<>(List.of(t.name(), ip, String.valueOf(port), String.valueOf(t.size()), n, w));
                if (t.event()) {
                    tail.add("event");
                }
                return List.of(concat(concat(j, List.of("server")), tail), concat(concat(j, List.of("client")), tail));
            }));
        }
        tools.add(jrdmaTool("jrdma", List.of(), java, cp, n, w, vm));
        for (Map.Entry<String, List<String>> v : variants(System.getProperty(VARIANTS_PROPERTY, "")).entrySet()) {
            tools.add(jrdmaTool(v.getKey(), v.getValue(), java, cp, n, w, vm));
        }
        int port = 22000 + 100 * boot;
        for (int r = 0; r < rounds; r++) {
            for (Test test : tests) {
                for (int k = 0; k < tools.size(); k++) {
                    Tool tool = tools.get((k + r) % tools.size());   // rotated, round by round
                    String row = null;
                    for (int crashes = 0; row == null; ) {
                        List<List<String>> cmd = tool.runner().commands(test, ++port);
                        if (cmd == null) {
                            break;
                        }
                        Map<String, Long> before = counters(dev0, dev1);
                        DisniComparison.Run run = DisniComparison.run(cmd.get(0), cmd.get(1), tool.ready());
                        Map<String, Long> after = counters(dev0, dev1);
                        if (run.crashed() && crashes < CRASH_RETRIES) {
                            crashes++;
                            System.err.println("crashed, run again: " + String.join(" ", cmd.get(1)));
                            continue;
                        }
                        double[] v = parse(run.clientOutput(), test);
                        if (Double.isNaN(v[0])) {
                            System.err.println("no result from " + String.join(" ", cmd.get(1)) + ":\n" + run.clientOutput()
                                    + "\nits server said:\n" + run.serverOutput());
                        }
                        row = String.join("\t", String.valueOf(boot), String.valueOf(r + 1), test.label(), tool.label(),
                                fmt(v[0]), fmt(v[1]), fmt(v[2]), String.valueOf(crashes), moved(before, after), fmt(v[3]));
                    }
                    if (row != null) {
                        Files.writeString(out, row + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                                StandardOpenOption.APPEND);
                        System.err.println("boot " + boot + ": " + row);
                    }
                }
            }
        }
        Files.writeString(out, "#machine\t" + PerftestComparison.machine() + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /**
     * jrdma perf as a tool; {@code jvmOptions} go before its main class (a variant: the same
     * classes with a system property changed, for an A/B in one boot).
     */
    private static Tool jrdmaTool(String label, List<String> jvmOptions, String java, String cp, String n, String w,
            PerftestComparison.VmPair vm) {
        return new Tool(label, "server waiting on", (t, port) -> {
            List<String> jp = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
            jp.addAll(jvmOptions);
            jp.addAll(List.of("-cp", cp, "dev.jrdma.cli.Main",
                    "perf", t.name(), "--provider", "verbs", "-n", n, "-p", String.valueOf(port), "-u", "cm"));
            if (!t.name().equals("atomic_lat")) {
                jp.addAll(List.of("-s", String.valueOf(t.size())));
            }
            if (t.event()) {
                jp.add("-e");
            }
            // -u cm: rdma_cm's ack timeout, as DiSNI has (bench/vs-disni.md). The client's warm-up
            // is DiSNI's, 50 000 iterations: jrdma perf's own ends on a time limit, which under
            // icount counts instructions and would not end in the same place every boot.
            return List.of(concat(jp, List.of("-d", vm.dev0(), "--bind", vm.ip())),
                    concat(jp, List.of("-d", vm.dev1(), "--warmup", w, "--csv", vm.ip())));
        });
    }

    /**
     * The variants of jrdma to run beside it, from {@value #VARIANTS_PROPERTY}: {@code LABEL=OPTION OPTION...}
     * entries separated by {@code ;}, each option a JVM option of jrdma perf (for example
     * {@code own CQs=-Djrdma.verbs.sharedCompletionQueues=false}). Empty: none.
     */
    static Map<String, List<String>> variants(String spec) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (String entry : spec.split(";")) {
            if (entry.isBlank()) {
                continue;
            }
            int eq = entry.indexOf('=');
            String label = eq > 0 ? entry.substring(0, eq).trim() : "";
            List<String> options = eq > 0 ? Stream.of(entry.substring(eq + 1).trim().split("\\s+")).filter(o -> !o.isEmpty()).toList()
                    : List.of();
            if (label.isEmpty() || options.isEmpty() || label.equals("jrdma") || label.equals("perftest") || label.equals("DiSNI")
                    || m.containsKey(label) || label.contains("\t") || label.contains("|")
                    || options.stream().anyMatch(o -> !o.startsWith("-"))) {
                throw new IllegalArgumentException(VARIANTS_PROPERTY + ": each entry is LABEL=-OPTION..., a label of its own"
                        + " (not jrdma, perftest or DiSNI, no tab or |), options starting with '-'; not '" + entry + "' in '" + spec + "'");
            }
            m.put(label, options);
        }
        return m;
    }

    private static String fmt(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f", v);
    }

    /** Every rxe hardware counter of the devices, as "dev.counter"; a device without them has none. */
    static Map<String, Long> counters(String... devices) {
        Map<String, Long> m = new TreeMap<>();
        for (String d : devices) {
            Path dir = Path.of("/sys/class/infiniband", d, "ports/1/hw_counters");
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.sorted().toList()) {
                    try {
                        m.put(d + "." + f.getFileName(), Long.parseLong(Files.readString(f).trim()));
                    } catch (IOException | NumberFormatException e) {
                        // not a counter (lifespan is one), or unreadable: left out
                    }
                }
            } catch (IOException e) {
                // no counters
            }
        }
        return m;
    }

    /** The counters that moved, "name=delta" comma-separated ("-" when none did). */
    static String moved(Map<String, Long> before, Map<String, Long> after) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Long> e : after.entrySet()) {
            long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
            if (d != 0 && !e.getKey().endsWith(".lifespan")) {
                b.append(b.isEmpty() ? "" : ",").append(e.getKey()).append('=').append(d);
            }
        }
        return b.isEmpty() ? "-" : b.toString();
    }

    /** {t_typical, t_avg, t_min, t_max} in us from perftest's result row, jrdma perf's CSV row or DisniLatency's line. */
    static double[] parse(String output, Test test) {
        List<String> lines = List.of(output.split("\n"));
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 6 && f[0].equals(String.valueOf(test.size())) && f[1].matches("\\d+")) {   // perftest
                return new double[] {Double.parseDouble(f[4]), Double.parseDouble(f[5]), Double.parseDouble(f[2]),
                    Double.parseDouble(f[3])};
            }
            if (f.length >= 9 && f[0].equals("disni") && f[1].equals(test.name()) && f[3].equals("t_typical_us")) {
                return new double[] {Double.parseDouble(f[4]), Double.parseDouble(f[6]), Double.parseDouble(f[8]),
                    Double.parseDouble(f[10])};
            }
            String[] c = line.split(",");
            if (c.length >= 7 && c[0].equals(test.name()) && c[1].equals(String.valueOf(test.size()))) {   // jrdma perf --csv
                return new double[] {Double.parseDouble(c[5]), Double.parseDouble(c[6]), Double.parseDouble(c[3]),
                    Double.parseDouble(c[4])};
            }
        }
        return new double[] {Double.NaN, Double.NaN, Double.NaN, Double.NaN};
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> l = new ArrayList<>(a);
        l.addAll(b);
        return l;
    }

    /** One run from a boot's file. */
    record Row(int boot, int round, String test, String tool, double typical, double avg, double min, int crashes, String counters,
               double max) {
        static Row parse(String line) {
            String[] f = line.split("\t");
            return new Row(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], f[3], num(f[4]), num(f[5]), num(f[6]),
                    Integer.parseInt(f[7]), f[8], f.length > 9 ? num(f[9]) : Double.NaN);
        }

        private static double num(String s) {
            return s.equals("-") ? Double.NaN : Double.parseDouble(s);
        }

        /** What rxe counted as transport retries: completer_retry_err of both devices. */
        long retries() {
            long sum = 0;
            for (String kv : counters.split(",")) {
                int eq = kv.indexOf('=');
                if (eq > 0 && kv.substring(0, eq).endsWith(".completer_retry_err")) {
                    sum += Long.parseLong(kv.substring(eq + 1));
                }
            }
            return sum;
        }
    }

    static void report(Path out, List<Path> boots) throws IOException {
        List<Row> rows = new ArrayList<>();
        List<String> machines = new ArrayList<>();
        for (Path p : boots) {
            for (String line : Files.readAllLines(p, StandardCharsets.UTF_8)) {
                if (line.startsWith("#machine\t")) {
                    machines.add(line.substring("#machine\t".length()));
                } else if (!line.isBlank()) {
                    rows.add(Row.parse(line));
                }
            }
        }
        // test -> tool -> its runs, in the order first seen
        Map<String, Map<String, List<Row>>> by = new LinkedHashMap<>();
        List<String> toolOrder = new ArrayList<>();
        for (Row r : rows) {
            by.computeIfAbsent(r.test(), k -> new LinkedHashMap<>()).computeIfAbsent(r.tool(), k -> new ArrayList<>()).add(r);
            if (!toolOrder.contains(r.tool())) {
                toolOrder.add(r.tool());
            }
        }
        toolOrder.sort((a, b) -> Integer.compare(rank(a), rank(b)));
        long bootCount = rows.stream().mapToInt(Row::boot).distinct().count();
        StringBuilder md = new StringBuilder("# perftest" + (toolOrder.contains("DiSNI") ? ", DiSNI" : "")
                + " and jrdma counted in instructions (icount)\n\n");
        md.append("Generated by `scripts/").append(toolOrder.contains("DiSNI") ? "bench-vs-disni" : "bench-vs-perftest")
                .append(" --icount` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME)).append(" from ")
                .append(bootCount).append(" boots of `scripts/softroce-vm --icount` (QEMU `-icount shift=0,sleep=off`, single-threaded TCG,\n")
                .append("one vCPU: the guest's clocks advance 1 ns per guest instruction, so a virtual us is a thousand instructions,\n")
                .append("user and kernel). ").append(machines.isEmpty() ? "" : machines.get(0)).append(".\n")
                .append("Server on rxe0, client on rxe1; ").append(String.format(Locale.ROOT, "%,d", ITERATIONS))
                .append(" timed iterations; the Java tools after ").append(String.format(Locale.ROOT, "%,d", WARM_UP))
                .append(" untimed (perftest: its own).\n")
                .append("DiSNI 2.1 (its jar from Maven Central, its libdisni built from its v2.1 source) runs `scripts/lib/DisniLatency.java`\n")
                .append("on the JDK jrdma runs on (named above);\n")
                .append("jrdma runs `jrdma perf -u cm` (rdma_cm's ack timeout, as DiSNI's); perftest its defaults. read_lat 64 B and\n")
                .append("atomic_lat (8 B fetch-and-add) poll on the client only: exact. `-e`: the ping-pong with both sides sleeping on\n")
                .append("completion events (perftest `-e`), 64 B.\n\n");
        md.append("Instructions per operation (t_typical in virtual ns: the median iteration; the ping-pongs: half a round trip),\n")
                .append("the mean over all runs, and each tool's excess over perftest:\n\n| test |");
        for (String t : toolOrder) {
            md.append(' ').append(t).append(" |");
        }
        for (String t : toolOrder) {
            if (!t.equals("perftest")) {
                md.append(' ').append(t).append(" − perftest |");
            }
        }
        boolean both = toolOrder.contains("DiSNI") && toolOrder.contains("jrdma");
        if (both) {
            md.append(" jrdma − DiSNI |");
        }
        md.append(" runs agree within 1 % |\n|---|").append("---:|".repeat(2 * toolOrder.size() - 1 + (both ? 1 : 0))).append("---|\n");
        boolean allAgree = true;
        for (Map.Entry<String, Map<String, List<Row>>> test : by.entrySet()) {
            md.append("| ").append(test.getKey()).append(" |");
            Map<String, Double> mean = new LinkedHashMap<>();
            List<String> spreads = new ArrayList<>();
            boolean agree = true;
            for (String t : toolOrder) {
                List<Row> runs = test.getValue().getOrDefault(t, List.of());
                double[] v = runs.stream().mapToDouble(Row::typical).filter(x -> !Double.isNaN(x)).toArray();
                if (v.length == 0) {
                    md.append(" – |");
                    continue;
                }
                double m = Arrays.stream(v).average().orElseThrow();
                mean.put(t, m);
                double lo = Arrays.stream(v).min().orElseThrow(), hi = Arrays.stream(v).max().orElseThrow();
                double spread = (hi - lo) / lo;
                agree &= spread <= AGREEMENT && v.length >= 2;
                spreads.add(String.format(Locale.ROOT, "%s %.2f %%", t, 100 * spread));
                md.append(String.format(Locale.ROOT, " %,.0f |", 1000 * m));
            }
            Double base = mean.get("perftest");
            for (String t : toolOrder) {
                if (!t.equals("perftest")) {
                    Double m = mean.get(t);
                    md.append(m == null || base == null ? " – |" : String.format(Locale.ROOT, " %+,.0f |", 1000 * (m - base)));
                }
            }
            if (both) {
                Double j = mean.get("jrdma"), d = mean.get("DiSNI");
                md.append(j == null || d == null ? " – |" : String.format(Locale.ROOT, " %+,.0f |", 1000 * (j - d)));
            }
            allAgree &= agree;
            md.append(' ').append(agree ? "yes" : "**no**").append(" (").append(String.join(", ", spreads)).append(") |\n");
        }
        md.append("\n").append(allAgree ? "Every tool's runs agree within 1 % on every test."
                : "**Not every tool's runs agree within 1 %** (the spread is (max − min) / min over all runs of all boots).").append("\n\n");
        md.append("Every run: boot and round, t_typical, t_avg, t_min and t_max in virtual us (= thousands of instructions), then rxe's\n")
                .append("hardware counters that moved during it, both devices (`rxe0.` the server's, `rxe1.` the client's;\n")
                .append("`completer_retry_err`: requests sent again; `+N crashed`: JVM crashes before the run that counted):\n\n")
                .append("| test | tool | run | t_typical | t_avg | t_min | t_max | retries | counters |\n|---|---|---|---:|---:|---:|---:|---:|---|\n");
        for (Map.Entry<String, Map<String, List<Row>>> test : by.entrySet()) {
            for (String t : toolOrder) {
                for (Row r : test.getValue().getOrDefault(t, List.of())) {
                    md.append("| ").append(test.getKey()).append(" | ").append(t).append(" | boot ").append(r.boot()).append(" round ")
                            .append(r.round()).append(r.crashes() > 0 ? " +" + r.crashes() + " crashed" : "").append(" | ")
                            .append(fmt(r.typical())).append(" | ").append(fmt(r.avg())).append(" | ").append(fmt(r.min()))
                            .append(" | ").append(fmt(r.max())).append(" | ").append(r.retries()).append(" | ").append(r.counters().replace(",", ", ")).append(" |\n");
                }
            }
        }
        String name = out.getFileName().toString();
        Path notes = out.toAbsolutePath().getParent().resolve(name.substring(0, name.length() - 3) + "-notes.md");
        if (Files.exists(notes)) {
            md.append("\n").append(Files.readString(notes));
        }
        Files.writeString(out, md);
        System.out.print(md);
    }

    private static int rank(String tool) {
        return switch (tool) {
            case "perftest" -> 0;
            case "DiSNI" -> 1;
            case "jrdma" -> 2;
            default -> 3;
        };
    }
}
