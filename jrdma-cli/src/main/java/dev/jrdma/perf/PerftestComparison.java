package dev.jrdma.perf;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
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
    }

    private static final List<Case> CASES = List.of(
            new Case("write_lat", 2, 2000), new Case("read_lat", 2, 2000), new Case("send_lat", 2, 2000),
            new Case("atomic_lat", 8, 2000),
            new Case("write_bw", 4096, 5000), new Case("write_bw", 65536, 2000), new Case("write_bw", 1 << 20, 300),
            new Case("read_bw", 4096, 5000), new Case("read_bw", 65536, 2000), new Case("read_bw", 1 << 20, 300),
            new Case("send_bw", 4096, 5000), new Case("send_bw", 65536, 2000), new Case("atomic_bw", 8, 5000));

    private PerftestComparison() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]);
        String dev0 = System.getenv().getOrDefault("JRDMA_VM_DEV0", "rxe0");
        String dev1 = System.getenv().getOrDefault("JRDMA_VM_DEV1", "rxe1");
        String ip = System.getenv().getOrDefault("JRDMA_VM_IP0", "10.77.0.1");
        String gid = System.getenv().getOrDefault("JRDMA_VM_GID_INDEX", "1");
        String java = ProcessHandle.current().info().command().orElseThrow();
        String cp = System.getProperty("java.class.path");
        Map<Case, double[][]> got = new LinkedHashMap<>();   // case -> {perftest rounds, jrdma rounds}
        int port = 20000;
        // -Djrdma.compare.only=read_lat,write_bw: a quick look at some tests (the report then has only those).
        List<String> only = List.of(System.getProperty("jrdma.compare.only", "").split(","));
        List<Case> cases = CASES.stream().filter(c -> only.equals(List.of("")) || only.contains(c.test())).toList();
        for (int r = 0; r < rounds; r++) {
            for (Case c : cases) {
                double[][] v = got.computeIfAbsent(c, k -> {
                    double[][] a = new double[2][rounds];
                    Arrays.fill(a[0], Double.NaN);
                    Arrays.fill(a[1], Double.NaN);
                    return a;
                });
                // Alternate which goes first, round by round.
                for (int k = 0; k < 2; k++) {
                    boolean perftest = (k == 0) == (r % 2 == 0);
                    port++;
                    List<String> server, client;
                    if (perftest) {
                        List<String> common = List.of("-x", gid, "-s", String.valueOf(c.size()), "-n", String.valueOf(c.iterations()),
                                "-p", String.valueOf(port), "-F");
                        server = concat(List.of("ib_" + c.test(), "-d", dev0), common);
                        client = concat(concat(List.of("ib_" + c.test(), "-d", dev1), common), List.of(ip));
                    } else {
                        List<String> jp = List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp, "dev.jrdma.cli.Main", "perf",
                                c.test(), "--provider", "verbs", "-s", String.valueOf(c.size()), "-n", String.valueOf(c.iterations()),
                                "-p", String.valueOf(port));
                        server = concat(jp, List.of("-d", dev0, "--bind", ip));
                        client = concat(jp, List.of("-d", dev1, "--csv", ip));
                    }
                    double value = measure(server, client, c, perftest);
                    v[perftest ? 0 : 1][r] = value;
                    System.err.printf(Locale.ROOT, "round %d %-10s %8d B %-8s %.3f%n", r + 1, c.test(), c.size(),
                            perftest ? "perftest" : "jrdma", value);
                }
            }
        }
        write(out, got, rounds, dev0, dev1);
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> l = new ArrayList<>(a);
        l.addAll(b);
        return l;
    }

    /** Runs the server, then the client (retrying until the server listens); the client's figure, NaN on failure. */
    /** The longest one client run may take (the slowest case takes about a minute in the VM). */
    static final long ATTEMPT_SECONDS = 600;

    private static double measure(List<String> server, List<String> client, Case c, boolean perftest) throws Exception {
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
                        return Double.NaN;
                    }
                    List<String> lines = Files.readAllLines(output, java.nio.charset.StandardCharsets.ISO_8859_1);
                    double v = perftest ? parsePerftest(lines, c) : parseJrdma(lines, c);
                    if (!Double.isNaN(v)) {
                        return v;
                    }
                    String said = String.join("\n", lines);
                    // The server may not listen yet (a JVM starts slowly under an emulated CPU): try again.
                    if (!said.toLowerCase(Locale.ROOT).contains("refused") && !said.contains("Couldn't connect")
                            && !said.contains("connecting to")) {
                        System.err.println("no result from " + String.join(" ", client) + ":\n" + String.join("\n", lines));
                        return Double.NaN;
                    }
                }
                return Double.NaN;
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

    /** perftest's result line: the row whose first field is the size; t_typical (latency) or BW average. */
    static double parsePerftest(List<String> lines, Case c) {
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 5 && f[0].equals(String.valueOf(c.size())) && f[1].matches("\\d+")) {
                return Double.parseDouble(c.latency() ? f[4] : f[3]);
            }
        }
        return Double.NaN;
    }

    /** jrdma perf's CSV row: t_typical_us (latency) or bw_avg_MBps. */
    static double parseJrdma(List<String> lines, Case c) {
        for (String line : lines) {
            String[] f = line.split(",");
            if (f.length >= 5 && f[0].equals(c.test()) && f[1].equals(String.valueOf(c.size()))) {
                return Double.parseDouble(c.latency() ? f[5] : f[4]);
            }
        }
        return Double.NaN;
    }

    private static double median(double[] v) {
        double[] s = Arrays.stream(v).filter(x -> !Double.isNaN(x)).sorted().toArray();
        return s.length == 0 ? Double.NaN : s[s.length / 2];
    }

    private static void write(Path out, Map<Case, double[][]> got, int rounds, String dev0, String dev1) throws IOException {
        StringBuilder md = new StringBuilder();
        md.append("# jrdma perf against perftest\n\n");
        md.append("Generated by `scripts/bench-vs-perftest` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
                .append(": in the Soft-RoCE VM (QEMU TCG, an emulated CPU), server on ").append(dev0).append(", client on ")
                .append(dev1).append(", ").append(rounds).append(" rounds alternating which runs first; medians of the rounds.\n")
                .append("Latency is perftest's t_typical (the median; half the round trip for write_lat and send_lat), bandwidth\n")
                .append("its BW average in MB/sec. jrdma's figures are `jrdma perf`'s same columns. Each is one server and one client process.\n\n")
                .append("Read with the VM in mind. Its CPU is emulated, so every instruction the host runs in nanoseconds takes tens\n")
                .append("of times longer: a per-operation CPU cost (JIT-compiled Java around each post and poll, against perftest's C)\n")
                .append("that is small on hardware shows up here as a large share of the time. With single-threaded emulation, a\n")
                .append("ping-pong (write_lat, send_lat) also waits for the switch between the two vCPUs (about 4 ms), for both\n")
                .append("tools alike. Missed targets here say where jrdma spends CPU per operation, not what a NIC would show.\n\n");
        md.append("| test | bytes | iterations | perftest | jrdma | jrdma / perftest | target | met |\n|---|---:|---:|---:|---:|---:|---|---|\n");
        for (Map.Entry<Case, double[][]> e : got.entrySet()) {
            Case c = e.getKey();
            double p = median(e.getValue()[0]), j = median(e.getValue()[1]);
            double ratio = j / p;
            boolean met = c.latency() ? ratio <= 1.10 : ratio >= 0.90;
            md.append(String.format(Locale.ROOT, "| %s | %d | %d | %.2f %s | %.2f %s | %.2f | %s | %s |%n", c.test(), c.size(),
                    c.iterations(), p, c.latency() ? "us" : "MB/s", j, c.latency() ? "us" : "MB/s", ratio,
                    c.latency() ? "<= 1.10" : ">= 0.90", Double.isNaN(ratio) ? "no result" : met ? "yes" : "**no**"));
        }
        md.append("\nEvery round: ");
        for (Map.Entry<Case, double[][]> e : got.entrySet()) {
            md.append(String.format(Locale.ROOT, "%s %d B perftest %s, jrdma %s; ", e.getKey().test(), e.getKey().size(),
                    Arrays.toString(e.getValue()[0]), Arrays.toString(e.getValue()[1])));
        }
        md.append("\n\n![latency](vs-perftest-latency.png)\n\n![bandwidth](vs-perftest-bandwidth.png)\n");
        Files.createDirectories(out.toAbsolutePath().getParent());
        Files.writeString(out, md);
        Path dir = out.toAbsolutePath().getParent();
        plot(dir.resolve("vs-perftest-latency.png"), "Latency, t_typical (us, lower is better)", got, true);
        plot(dir.resolve("vs-perftest-bandwidth.png"), "Bandwidth, average (MB/s, higher is better)", got, false);
        System.out.print(md);
    }

    /** A grouped bar chart: perftest and jrdma side by side per case. */
    private static void plot(Path png, String title, Map<Case, double[][]> got, boolean latency) throws IOException {
        List<Case> cases = got.keySet().stream().filter(c -> c.latency() == latency).toList();
        int w = 120 + cases.size() * 110, h = 420;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
        g.drawString(title, 20, 24);
        double max = 0;
        for (Case c : cases) {
            for (double v : new double[] {median(got.get(c)[0]), median(got.get(c)[1])}) {
                if (!Double.isNaN(v)) {
                    max = Math.max(max, v);   // a case without a result must not scale the rest (NaN)
                }
            }
        }
        max = max <= 0 || Double.isNaN(max) ? 1 : max * 1.15;
        int x0 = 60, y0 = h - 70, top = 50;
        g.setStroke(new BasicStroke(1));
        g.drawLine(x0, y0, w - 20, y0);
        g.drawLine(x0, y0, x0, top);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        for (int t = 0; t <= 4; t++) {
            int y = y0 - (y0 - top) * t / 4;
            g.drawString(String.format(Locale.ROOT, "%.0f", max * t / 4), 5, y + 4);
        }
        Color perftest = new Color(0x4c72b0), jrdma = new Color(0xdd8452);
        for (int i = 0; i < cases.size(); i++) {
            Case c = cases.get(i);
            double[] v = {median(got.get(c)[0]), median(got.get(c)[1])};
            int x = x0 + 20 + i * 110;
            for (int k = 0; k < 2; k++) {
                if (Double.isNaN(v[k])) {
                    continue;
                }
                int bh = (int) ((y0 - top) * v[k] / max);
                g.setColor(k == 0 ? perftest : jrdma);
                g.fillRect(x + k * 40, y0 - bh, 36, bh);
                g.setColor(Color.BLACK);
                g.drawString(String.format(Locale.ROOT, v[k] >= 100 ? "%.0f" : "%.2f", v[k]), x + k * 40, y0 - bh - 4);
            }
            g.drawString(c.test(), x, y0 + 16);
            g.drawString(c.size() >= 1 << 20 ? (c.size() >> 20) + " MiB" : c.size() >= 1024 ? (c.size() >> 10) + " KiB" : c.size() + " B",
                    x, y0 + 30);
        }
        g.setColor(perftest);
        g.fillRect(w - 200, 35, 12, 12);
        g.setColor(jrdma);
        g.fillRect(w - 110, 35, 12, 12);
        g.setColor(Color.BLACK);
        g.drawString("perftest", w - 184, 46);
        g.drawString("jrdma perf", w - 94, 46);
        g.dispose();
        ImageIO.write(img, "png", png.toFile());
    }
}
