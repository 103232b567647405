package dev.jrdma.perf;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import javax.imageio.ImageIO;

/**
 * perftest and {@code jrdma perf} back to back on the same two devices (the Soft-RoCE VM's rxe0
 * and rxe1), alternating, several rounds; writes a Markdown report with the median of each and
 * their ratio per test, and two PNG plots. Each side runs as two processes (server and client),
 * as perftest is run.
 *
 * <pre>PerftestComparison OUT.md ROUNDS</pre>
 */
public final class PerftestComparison {
    /** A measurement: what is compared (latency: t_typical in us, lower is better; bandwidth: MB/s average). */
    record Case(String test, int size, int iterations) {
        boolean latency() {
            return test.endsWith("_lat");
        }

        boolean pingPong() {
            return test.equals("write_lat") || test.equals("send_lat");
        }

        /**
         * jrdma's untimed warm-up iterations. Under the emulated CPU the JIT needs tens of
         * thousands of operations before the loop runs compiled (read_lat measured 88 to 105 us
         * after 2 000, 40 us after 50 000; perftest 34 us). A ping-pong is bound by the vCPU
         * switch (about 4 ms a hop for both tools), so more would only take minutes; for
         * bandwidth the warm-up is held to about 64 MiB of data (a 1 MiB warm-up of 50 000
         * would take an hour at 20 MB/s), never below jrdma perf's own default.
         */
        int jrdmaWarmUp() {
            int own = Math.min(iterations, PerfClient.WARM_UP_MAX);
            if (pingPong()) {
                return own;
            }
            return latency() ? JIT_WARM_UP : Math.max(own, Math.min(JIT_WARM_UP, (64 << 20) / size));
        }
    }

    static final int JIT_WARM_UP = 50_000;

    /** The VM's two devices, the server's address and the GID index, as scripts/softroce-vm passes them. */
    record VmPair(String dev0, String dev1, String ip, String gid) {
        static VmPair fromEnvironment() {
            Map<String, String> env = System.getenv();
            return new VmPair(env.getOrDefault("JRDMA_VM_DEV0", "rxe0"), env.getOrDefault("JRDMA_VM_DEV1", "rxe1"),
                    env.getOrDefault("JRDMA_VM_IP0", "10.77.0.1"), env.getOrDefault("JRDMA_VM_GID_INDEX", "1"));
        }
    }

    /**
     * Per measurement: latency {t_typical, p99, p99.9} in us; bandwidth {BW average} in MB/s;
     * then the transport retries rxe counted meanwhile ({@code completer_retry_err} of both
     * devices: requests sent again after an ack timeout or a lost packet).
     */
    static final int TYPICAL = 0, P99 = 1, P999 = 2, RETRIES = 3;

    private static final List<Case> CASES = List.of(
            new Case("write_lat", 2, 2000), new Case("read_lat", 2, 2000), new Case("send_lat", 2, 2000),
            new Case("atomic_lat", 8, 2000),
            new Case("write_bw", 4096, 5000), new Case("write_bw", 65536, 2000), new Case("write_bw", 1 << 20, 300),
            new Case("read_bw", 4096, 5000), new Case("read_bw", 65536, 2000), new Case("read_bw", 1 << 20, 300),
            new Case("send_bw", 4096, 5000), new Case("send_bw", 65536, 2000), new Case("atomic_bw", 8, 5000));

    /**
     * With -Djrdma.compare.ud=true: the send tests as datagrams, both tools ({@code -c UD}), at
     * sizes up to rxe's path MTU over the VM's veth (1024).
     */
    private static final List<Case> UD_CASES = List.of(
            new Case("send_lat", 2, 2000), new Case("send_lat", 1024, 2000), new Case("send_bw", 1024, 5000));

    /** Whether this run is -c UD's (both tools). */
    private static boolean ud;

    /** The bandwidth tests' post list for both tools (1: each operation posted alone). */
    private static int postList = 1;
    /** Whether the send tests use --use-srq (both tools). */
    private static boolean srq;

    private PerftestComparison() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]);
        VmPair vm = VmPair.fromEnvironment();
        String dev0 = vm.dev0(), dev1 = vm.dev1(), ip = vm.ip(), gid = vm.gid();
        String java = ProcessHandle.current().info().command().orElseThrow();
        String cp = System.getProperty("java.class.path");
        Map<Case, double[][][]> got = new LinkedHashMap<>();   // case -> [perftest, jrdma][round][TYPICAL..P999]
        int port = 20000;
        long began = System.nanoTime();
        // -Djrdma.compare.only=read_lat,write_bw: a quick look at some tests (the report then has only those).
        List<String> only = List.of(System.getProperty("jrdma.compare.only", "").split(","));
        ud = Boolean.getBoolean("jrdma.compare.ud");
        List<Case> cases = (ud ? UD_CASES : CASES).stream().filter(c -> only.equals(List.of("")) || only.contains(c.test())).toList();
        // -Djrdma.compare.postList=N: the bandwidth tests post N at a time, both tools (-l N).
        postList = Integer.getInteger("jrdma.compare.postList", 1);
        // -Djrdma.compare.srq=true: the send tests receive in a shared receive queue, both tools (--use-srq).
        srq = Boolean.getBoolean("jrdma.compare.srq");
        for (int r = 0; r < rounds; r++) {
            for (Case c : cases) {
                double[][][] v = got.computeIfAbsent(c, k -> {
                    double[][][] a = new double[2][rounds][RETRIES + 1];
                    for (double[][] tool : a) {
                        for (double[] round : tool) {
                            Arrays.fill(round, Double.NaN);
                        }
                    }
                    return a;
                });
                // Alternate which goes first, round by round.
                for (int k = 0; k < 2; k++) {
                    boolean perftest = (k == 0) == (r % 2 == 0);
                    port++;
                    List<String> server, client;
                    boolean useSrq = srq && c.test().startsWith("send");   // perftest has --use-srq for send tests only
                    if (perftest) {
                        List<String> common = List.of("-x", gid, "-s", String.valueOf(c.size()), "-n", String.valueOf(c.iterations()),
                                "-p", String.valueOf(port), "-F");
                        if (postList > 1 && !c.latency()) {
                            common = concat(common, List.of("-l", String.valueOf(postList)));
                        }
                        if (useSrq) {
                            common = concat(common, List.of("--use-srq"));
                        }
                        if (ud) {
                            common = concat(common, List.of("-c", "UD"));
                        }
                        server = concat(List.of("ib_" + c.test(), "-d", dev0), common);
                        client = concat(concat(List.of("ib_" + c.test(), "-d", dev1), common), List.of(ip));
                    } else {
                        List<String> jp = List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp, "dev.jrdma.cli.Main", "perf",
                                c.test(), "--provider", "verbs", "-s", String.valueOf(c.size()), "-n", String.valueOf(c.iterations()),
                                "-p", String.valueOf(port));
                        server = concat(jp, List.of("-d", dev0, "--bind", ip));
                        client = concat(jp, List.of("-d", dev1, "--warmup", String.valueOf(c.jrdmaWarmUp()), "--csv", ip));
                        if (postList > 1 && !c.latency()) {
                            client = concat(client, List.of("-l", String.valueOf(postList)));
                        }
                        if (useSrq) {
                            server = concat(server, List.of("--use-srq"));
                            client = concat(client, List.of("--use-srq"));
                        }
                        if (ud) {
                            server = concat(server, List.of("-c", "UD"));
                            client = concat(client, List.of("-c", "UD"));
                        }
                    }
                    long retriesBefore = retries(dev0, dev1);
                    double[] value = Arrays.copyOf(measure(server, client, c, perftest), RETRIES + 1);
                    long retriesAfter = retries(dev0, dev1);
                    value[RETRIES] = retriesBefore < 0 || retriesAfter < 0 ? Double.NaN : retriesAfter - retriesBefore;
                    v[perftest ? 0 : 1][r] = value;
                    System.err.printf(Locale.ROOT, "round %d %-10s %8d B %-8s %s%n", r + 1, c.test(), c.size(),
                            perftest ? "perftest" : "jrdma", Arrays.toString(value));
                }
            }
            // After every round: a run cut short still leaves a report of the rounds it finished.
            write(out, got, r + 1, rounds, dev0, dev1, (System.nanoTime() - began) / 60_000_000_000.0);
        }
    }

    /** rxe's {@code completer_retry_err} of both devices, summed; -1 when a counter cannot be read. */
    static long retries(String... devices) {
        long sum = 0;
        for (String d : devices) {
            Path counter = Path.of("/sys/class/infiniband", d, "ports/1/hw_counters/completer_retry_err");
            try {
                sum += Long.parseLong(Files.readString(counter).trim());
            } catch (IOException | NumberFormatException e) {
                return -1;
            }
        }
        return sum;
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> l = new ArrayList<>(a);
        l.addAll(b);
        return l;
    }

    /** The longest one client run may take (the slowest case takes about a minute in the VM). */
    static final long ATTEMPT_SECONDS = 600;

    private static final double[] NO_RESULT = {Double.NaN, Double.NaN, Double.NaN};

    /** Runs the server, then the client (retrying until the server listens); the client's figures, NaN on failure. */
    private static double[] measure(List<String> server, List<String> client, Case c, boolean perftest) throws Exception {
        Process s = new ProcessBuilder(server).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            // Each attempt, and all of them together, are bounded: the client's output goes to a
            // file, so a client that hangs is cut off by waitFor (a reader of its pipe would block).
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(15);
            Path output = Files.createTempFile("jrdma-compare", ".out");
            try {
                for (int attempt = 0; attempt < 40 && System.nanoTime() < deadline; attempt++) {
                    Thread.sleep(attempt == 0 ? 1500 : 500);
                    Process p = new ProcessBuilder(client).redirectErrorStream(true).redirectOutput(output.toFile()).start();
                    if (!p.waitFor(ATTEMPT_SECONDS, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                        System.err.println("no result from " + String.join(" ", client) + " within " + ATTEMPT_SECONDS + " s:\n"
                                + Files.readString(output, java.nio.charset.StandardCharsets.ISO_8859_1));
                        return NO_RESULT;
                    }
                    List<String> lines = Files.readAllLines(output, java.nio.charset.StandardCharsets.ISO_8859_1);
                    double[] v = perftest ? parsePerftest(lines, c) : parseJrdma(lines, c);
                    if (!Double.isNaN(v[TYPICAL])) {
                        return v;
                    }
                    String said = String.join("\n", lines);
                    // The server may not listen yet (a JVM starts slowly under an emulated CPU): try again.
                    if (!said.toLowerCase(Locale.ROOT).contains("refused") && !said.contains("Couldn't connect")
                            && !said.contains("connecting to")) {
                        System.err.println("no result from " + String.join(" ", client) + ":\n" + String.join("\n", lines));
                        return NO_RESULT;
                    }
                }
                return NO_RESULT;
            } finally {
                Files.deleteIfExists(output);
            }
        } finally {
            s.destroy();
            if (!s.waitFor(10, TimeUnit.SECONDS)) {
                s.destroyForcibly();
            }
        }
    }

    /**
     * perftest's result line, the row whose first field is the size: latency {t_typical, 99%,
     * 99.9% percentile}, bandwidth {BW average}.
     */
    static double[] parsePerftest(List<String> lines, Case c) {
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 5 && f[0].equals(String.valueOf(c.size())) && f[1].matches("\\d+")) {
                return c.latency() && f.length >= 9
                        ? new double[] {Double.parseDouble(f[4]), Double.parseDouble(f[7]), Double.parseDouble(f[8])}
                        : new double[] {Double.parseDouble(c.latency() ? f[4] : f[3]), Double.NaN, Double.NaN};
            }
        }
        return NO_RESULT;
    }

    /** jrdma perf's CSV row: latency {t_typical_us, p99_us, p99_9_us}, bandwidth {bw_avg_MBps}. */
    static double[] parseJrdma(List<String> lines, Case c) {
        for (String line : lines) {
            String[] f = line.split(",");
            if (f.length >= 5 && f[0].equals(c.test()) && f[1].equals(String.valueOf(c.size()))) {
                return c.latency() && f.length >= 11
                        ? new double[] {Double.parseDouble(f[5]), Double.parseDouble(f[9]), Double.parseDouble(f[10])}
                        : new double[] {Double.parseDouble(c.latency() ? f[5] : f[4]), Double.NaN, Double.NaN};
            }
        }
        return NO_RESULT;
    }

    /** The median over rounds of figure {@code k} (rounds without a result left out); NaN when none has one. */
    static double median(double[][] rounds, int k) {
        return median(Arrays.stream(rounds).mapToDouble(r -> r[k]).toArray());
    }

    /** The median of {@code v}, NaNs (runs without a result) left out; NaN when nothing is left. */
    static double median(double[] v) {
        double[] s = Arrays.stream(v).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (s.length == 0) {
            return Double.NaN;
        }
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static String unit(Case c) {
        return c.latency() ? "us" : "MB/s";
    }

    static void write(Path out, Map<Case, double[][][]> got, int done, int rounds, String dev0, String dev1,
                              double minutes) throws IOException {
        StringBuilder md = new StringBuilder();
        md.append("# jrdma perf against perftest\n\n");
        md.append("Generated by `scripts/bench-vs-perftest` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
                .append(" (").append(machine()).append("): in the Soft-RoCE VM (QEMU TCG, an emulated CPU), server on ")
                .append(dev0).append(", client on ").append(dev1).append("; ").append(done).append(" of ").append(rounds)
                .append(" rounds done").append(done < rounds ? " (the run was cut short)" : "")
                .append(String.format(Locale.ROOT, " in %.0f min", minutes))
                .append(", alternating which tool runs first; medians of the rounds.\n")
                .append("Latency is perftest's t_typical (the median; half the round trip for write_lat and send_lat), bandwidth\n")
                .append("its BW average in MB/sec (MB = 2^20 bytes). jrdma's figures are `jrdma perf`'s same columns. Each tool runs as\n")
                .append("one server and one client process, perftest with its defaults (tx depth 128, one completion per 100 sends,\n")
                .append("QP ack timeout 2^14 x 4.096 us = 67 ms, RNR timer 0.64 ms, send_bw's server posting 512 receives), jrdma perf\n")
                .append("with its own (tx depth 128, every operation completes on its own, the same ack timeout and RNR timer, 512\n")
                .append("receives up to 64 MiB).\n")
                .append(postList > 1 ? "**This run's bandwidth tests post " + postList + " operations at a time, both tools (`-l " + postList
                        + "`): perftest a list of work requests with one completion for them, jrdma one `Batch`.**\n" : "")
                .append(srq ? "**This run's send tests receive in a shared receive queue on both ends, both tools (`--use-srq`).**\n" : "")
                .append(ud ? "**This run's tests send datagrams, both tools (`-c UD`): perftest over UD queue pairs, jrdma over"
                        + " `DatagramEndpoint`s; send_bw is the sender's rate (UD loses what finds no receive).**\n" : "")
                .append("\n");
        md.append("| test | bytes | iterations | jrdma warm-up | perftest | jrdma | jrdma / perftest | target | met |\n")
                .append("|---|---:|---:|---:|---:|---:|---:|---|---|\n");
        for (Map.Entry<Case, double[][][]> e : got.entrySet()) {
            Case c = e.getKey();
            double p = median(e.getValue()[0], TYPICAL), j = median(e.getValue()[1], TYPICAL);
            double ratio = j / p;
            boolean met = c.latency() ? ratio <= 1.10 : ratio >= 0.90;
            md.append(String.format(Locale.ROOT, "| %s | %d | %d | %d | %.2f %s | %.2f %s | %.2f | %s | %s |%n", c.test(), c.size(),
                    c.iterations(), c.jrdmaWarmUp(), p, unit(c), j, unit(c), ratio,
                    c.latency() ? "<= 1.10" : ">= 0.90", Double.isNaN(ratio) ? "no result" : met ? "yes" : "**no**"));
        }
        md.append("\nLatency tails (medians over rounds; perftest's 99% and 99.9% percentile columns, jrdma's p99 and p99.9):\n\n")
                .append("| test | bytes | perftest p99 | jrdma p99 | perftest p99.9 | jrdma p99.9 |\n|---|---:|---:|---:|---:|---:|\n");
        for (Map.Entry<Case, double[][][]> e : got.entrySet()) {
            Case c = e.getKey();
            if (c.latency()) {
                md.append(String.format(Locale.ROOT, "| %s | %d | %.2f us | %.2f us | %.2f us | %.2f us |%n", c.test(), c.size(),
                        median(e.getValue()[0], P99), median(e.getValue()[1], P99), median(e.getValue()[0], P999),
                        median(e.getValue()[1], P999)));
            }
        }
        md.append("\nEvery round (t_typical or BW average), and the transport retries rxe counted during each run (requests\n")
                .append("sent again after an ack timeout of 67 ms or a lost packet: `completer_retry_err` of both devices). A run's\n")
                .append("retries include jrdma's warm-up, so the last column puts them per 1000 operations the run posted\n")
                .append("(perftest: the iterations; jrdma: warm-up and iterations), medians over rounds:\n\n")
                .append("| test | bytes | perftest | jrdma | perftest retries | jrdma retries | per 1000 ops: perftest / jrdma |\n")
                .append("|---|---:|---|---|---|---|---|\n");
        for (Map.Entry<Case, double[][][]> e : got.entrySet()) {
            Case c = e.getKey();
            md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s | %.2f / %.2f |%n", c.test(), c.size(),
                    rounds(e.getValue()[0], done, TYPICAL), rounds(e.getValue()[1], done, TYPICAL),
                    rounds(e.getValue()[0], done, RETRIES), rounds(e.getValue()[1], done, RETRIES),
                    retriesPer1000(e.getValue()[0], c.iterations()), retriesPer1000(e.getValue()[1], c.iterations() + c.jrdmaWarmUp())));
        }
        // Named after the report: vs-perftest.md has vs-perftest-latency.png, vs-perftest-ud.md vs-perftest-ud-latency.png.
        String base = out.getFileName().toString().replaceFirst("\\.md$", "");
        md.append("\n![latency](" + base + "-latency.png)\n\n![bandwidth](" + base + "-bandwidth.png)\n");
        Path dir = out.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path notes = dir.resolve(base + "-notes.md");
        if (Files.exists(notes)) {
            md.append("\n").append(Files.readString(notes));   // the hand-written reading of the targets, kept across runs
        }
        Files.writeString(out, md);
        writePng(dir.resolve(base + "-latency.png"), latencyPlot(got));
        writePng(dir.resolve(base + "-bandwidth.png"), bandwidthPlot(got));
        System.out.print(md);
    }

    /** The median over rounds of the retries per 1000 of the {@code operations} each run posted; NaN when none was counted. */
    static double retriesPer1000(double[][] rounds, long operations) {
        double[][] rates = Arrays.stream(rounds).filter(r -> r.length > RETRIES)
                .map(r -> new double[] {r[RETRIES] * 1000.0 / operations}).toArray(double[][]::new);
        return median(rates, 0);
    }

    /** Figure {@code k} of each round done, "-" where there is none. */
    private static String rounds(double[][] v, int done, int k) {
        StringBuilder b = new StringBuilder();
        for (int r = 0; r < done; r++) {
            double x = k < v[r].length ? v[r][k] : Double.NaN;
            b.append(r == 0 ? "" : ", ").append(Double.isNaN(x) ? "-"
                    : String.format(Locale.ROOT, k == RETRIES ? "%.0f" : "%.2f", x));
        }
        return b.toString();
    }

    private static void writePng(Path png, BufferedImage img) throws IOException {
        if (!ImageIO.write(img, "png", png.toFile())) {
            throw new IOException("no PNG writer in this JDK");
        }
    }

    /** Per latency test: perftest's and jrdma's t_typical, p99 and p99.9 as bars on a log axis. */
    static BufferedImage latencyPlot(Map<Case, double[][][]> got) {
        List<String> labels = new ArrayList<>();
        List<double[]> groups = new ArrayList<>();
        for (Map.Entry<Case, double[][][]> e : got.entrySet()) {
            if (e.getKey().latency()) {
                labels.add(e.getKey().test() + " " + e.getKey().size() + " B");
                double[][][] v = e.getValue();
                groups.add(new double[] {median(v[0], TYPICAL), median(v[0], P99), median(v[0], P999),
                    median(v[1], TYPICAL), median(v[1], P99), median(v[1], P999)});
            }
        }
        return PerfPlot.groupedBars("Latency in the Soft-RoCE VM: perftest against jrdma perf", "us (log)", labels,
                List.of("perftest typical", "perftest p99", "perftest p99.9", "jrdma typical", "jrdma p99", "jrdma p99.9"), groups);
    }

    /** Bandwidth against message size per test, perftest solid and jrdma dashed, log-log. */
    static BufferedImage bandwidthPlot(Map<Case, double[][][]> got) {
        double[] xs = got.keySet().stream().filter(c -> !c.latency()).mapToDouble(Case::size).distinct().sorted().toArray();
        Map<String, double[]> series = new LinkedHashMap<>();
        java.util.Set<String> dashed = new java.util.HashSet<>();
        for (Map.Entry<Case, double[][][]> e : got.entrySet()) {
            Case c = e.getKey();
            if (c.latency()) {
                continue;
            }
            int i = Arrays.binarySearch(xs, c.size());
            for (int tool = 0; tool < 2; tool++) {
                String name = c.test() + (tool == 0 ? " perftest" : " jrdma");
                double[] ys = series.computeIfAbsent(name, k -> {
                    double[] a = new double[xs.length];
                    Arrays.fill(a, Double.NaN);
                    return a;
                });
                ys[i] = median(e.getValue()[tool], TYPICAL);
                if (tool == 1) {
                    dashed.add(name);
                }
            }
        }
        if (xs.length == 0) {
            return PerfPlot.lines("Bandwidth: no bandwidth test in this run", "MB/s (log)", new double[] {1}, Map.of(), true);
        }
        return PerfPlot.lines("Bandwidth in the Soft-RoCE VM: perftest (solid) against jrdma perf (dashed)", "MB/s (log)", xs,
                series, true, dashed);
    }

    /** The guest as the VM shows it: CPU model (QEMU's emulated one), vCPUs, kernel and JDK. */
    static String machine() {
        String cpu = SoftwareProviderBench.cpuModel();
        return "guest " + cpu + ", " + Runtime.getRuntime().availableProcessors() + " vCPUs, Linux "
                + System.getProperty("os.version") + ", JDK " + Runtime.version() + "; host: "
                + System.getenv().getOrDefault("JRDMA_HOST_MACHINE", "not given (JRDMA_HOST_MACHINE)");
    }
}
