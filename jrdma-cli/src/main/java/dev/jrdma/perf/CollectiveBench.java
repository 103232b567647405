package dev.jrdma.perf;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.collective.AllToAllAlgorithm;
import dev.jrdma.collective.GroupConfig;
import dev.jrdma.collective.PeerGroup;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.imageio.ImageIO;

/**
 * All-to-all time against member count and block size, on one host: every member of a group
 * in this JVM (members spread over a few {@code Rdma}s, each with its IO thread), both
 * algorithms. One all-to-all's time runs from the call on the first member to the end of the
 * last member's; the figure is the median over the timed repetitions, after untimed ones.
 * Writes a Markdown report and a PNG plot.
 *
 * <pre>CollectiveBench OUT.md PROVIDER [MEMBERS,... [BLOCKS,...]]</pre>
 */
public final class CollectiveBench {
    /** Groups whose regions would pass this many bytes per member are left out (n * n * block). */
    static final long MAX_BYTES = 64L << 20;
    /** Untimed runs first: the JIT needs about a hundred collectives before the times settle (seen: 3.9 ms, then 58 us). */
    static final int WARM = 100, TIMED = 100;
    static final long CASE_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The IO threads' completion mode (-Djrdma.bench.completionMode, default ADAPTIVE as a user gets). */
    static final dev.jrdma.CompletionMode MODE =
            dev.jrdma.CompletionMode.valueOf(System.getProperty("jrdma.bench.completionMode", "ADAPTIVE"));

    private CollectiveBench() {
    }

    record Point(int members, int block, AllToAllAlgorithm algorithm, double medianUs, double minUs, int runs) {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        String provider = args.length > 1 ? args[1] : "shm";
        int[] sizes = args.length > 2 ? ints(args[2]) : new int[] {2, 4, 8, 16, 32, 64};
        int[] blocks = args.length > 3 ? ints(args[3]) : new int[] {64, 4096, 65536};
        List<Point> points = new ArrayList<>();
        for (int n : sizes) {
            points.addAll(measure(provider, n, blocks));
        }
        write(out, provider, sizes, blocks, points);
    }

    static int[] ints(String csv) {
        return Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    static List<Point> measure(String provider, int n, int[] blocks) throws Exception {
        List<Rdma> rdmas = new ArrayList<>();
        List<PeerGroup> g = new ArrayList<>();
        try {
            for (int i = 0; i < Math.min(n, 4); i++) {
                rdmas.add(Rdma.builder().provider(provider).completionMode(MODE).build());
            }
            List<InetSocketAddress> members = new ArrayList<>();
            while (members.size() < n) {
                try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                    InetSocketAddress a = new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
                    if (!members.contains(a)) {   // the kernel may hand a just-closed port out again
                        members.add(a);
                    }
                }
            }
            GroupConfig config = GroupConfig.defaults().withJoinTimeout(Duration.ofSeconds(180));
            List<CompletableFuture<PeerGroup>> joining = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                joining.add(PeerGroup.joinAsync(rdmas.get(i % rdmas.size()), members, i, config));
            }
            for (CompletableFuture<PeerGroup> f : joining) {
                g.add(f.get(200, TimeUnit.SECONDS));
            }
            List<Point> points = new ArrayList<>();
            for (int block : blocks) {
                if ((long) n * n * block > MAX_BYTES) {
                    continue;
                }
                List<LocalRegion> send = new ArrayList<>(), recv = new ArrayList<>();
                for (PeerGroup m : g) {
                    LocalRegion s = m.rdma().allocate((long) n * block);
                    s.segment().fill((byte) m.rank());
                    send.add(s);
                    recv.add(m.rdma().allocate((long) n * block));
                }
                for (AllToAllAlgorithm a : AllToAllAlgorithm.values()) {
                    points.add(time(g, send, recv, block, a));
                }
                send.forEach(LocalRegion::close);
                recv.forEach(LocalRegion::close);
            }
            return points;
        } finally {
            g.forEach(PeerGroup::close);
            rdmas.forEach(Rdma::close);
        }
    }

    private static Point time(List<PeerGroup> g, List<LocalRegion> send, List<LocalRegion> recv, int block, AllToAllAlgorithm a)
            throws Exception {
        int n = g.size();
        List<Long> took = new ArrayList<>();
        long end = System.nanoTime() + CASE_NANOS;
        for (int i = 0; i < WARM + TIMED && System.nanoTime() < end; i++) {
            long t0 = System.nanoTime();
            List<CompletableFuture<Void>> f = new ArrayList<>(n);
            for (int r = 0; r < n; r++) {
                f.add(g.get(r).allToAll(send.get(r), recv.get(r), block, a));
            }
            CompletableFuture.allOf(f.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
            long t = System.nanoTime() - t0;
            if (i >= WARM) {
                took.add(t);
            }
        }
        // Every block where it belongs (member r got a block of member `from`, which holds from's rank).
        for (int r = 0; r < n; r++) {
            for (int from = 0; from < n; from++) {
                byte b = recv.get(r).segment().get(ValueLayout.JAVA_BYTE, (long) from * block + block - 1);
                if (b != (byte) from) {
                    throw new IllegalStateException(a + ": member " + r + " has " + b + " where rank " + from + "'s block belongs");
                }
            }
        }
        long[] s = took.stream().mapToLong(Long::longValue).sorted().toArray();
        if (s.length == 0) {
            return new Point(n, block, a, Double.NaN, Double.NaN, 0);
        }
        return new Point(n, block, a, s[s.length / 2] / 1e3, s[0] / 1e3, s.length);
    }

    static void write(Path out, String provider, int[] sizes, int[] blocks, List<Point> points) throws IOException {
        StringBuilder md = new StringBuilder("# All-to-all: time against members and block size\n\n");
        md.append("Generated by `scripts/bench-collectives` on ").append(Instant.now()).append(": ")
                .append(Runtime.getRuntime().availableProcessors()).append(" CPUs, ").append(SoftwareProviderBench.cpuModel())
                .append(", JDK ").append(Runtime.version()).append(", provider ").append(provider).append(".\n\n")
                .append("Every member of the group runs in one JVM on this host (members spread over ").append("up to 4 `Rdma`s,")
                .append(" each with one IO thread), so the members share the host's CPUs: the numbers show how the algorithms scale")
                .append(" with the group and the block, not what a cluster of hosts would see. One all-to-all is timed from its call on")
                .append(" the first member to the end of the last member's; each figure is the median of ").append(TIMED)
                .append(" timed runs after ").append(WARM).append(" untimed ones (fewer when a case passed 30 s); the calling")
                .append(" thread waits for each with get(), so a thread wake-up is part of every figure. IO threads: ")
                .append(MODE).append(".")
                .append(" Groups where n x n x block exceeds ").append(MAX_BYTES >> 20).append(" MiB are left out.\n\n");
        md.append("| members | block | PAIRWISE median | PAIRWISE min | SEQUENTIAL median | SEQUENTIAL min | timed runs (pairwise / sequential) |\n")
                .append("|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int n : sizes) {
            for (int b : blocks) {
                Point p = find(points, n, b, AllToAllAlgorithm.PAIRWISE), s = find(points, n, b, AllToAllAlgorithm.SEQUENTIAL);
                if (p == null || s == null) {
                    continue;
                }
                md.append(String.format(Locale.ROOT, "| %d | %d B | %.0f us | %.0f us | %.0f us | %.0f us | %d / %d |%n", n, b,
                        p.medianUs(), p.minUs(), s.medianUs(), s.minUs(), p.runs(), s.runs()));
            }
        }
        md.append("\n![all-to-all](collectives.png)\n\nRegenerate: `scripts/bench-collectives` (writes this file).\n");
        Files.createDirectories(out.toAbsolutePath().getParent());
        Files.writeString(out, md);
        Map<String, double[]> series = new LinkedHashMap<>();
        java.util.Set<String> dashed = new java.util.HashSet<>();
        double[] xs = Arrays.stream(sizes).asDoubleStream().toArray();
        for (int b : blocks) {
            // Pairwise first: the dashed (sequential) series takes the colour of the solid one before it.
            for (AllToAllAlgorithm a : List.of(AllToAllAlgorithm.PAIRWISE, AllToAllAlgorithm.SEQUENTIAL)) {
                String name = (b >= 1024 ? (b >> 10) + " KiB " : b + " B ") + a.name().toLowerCase(Locale.ROOT);
                double[] ys = new double[sizes.length];
                for (int i = 0; i < sizes.length; i++) {
                    Point p = find(points, sizes[i], b, a);
                    ys[i] = p == null ? Double.NaN : p.medianUs();
                }
                series.put(name, ys);
                if (a == AllToAllAlgorithm.SEQUENTIAL) {
                    dashed.add(name);
                }
            }
        }
        var img = PerfPlot.lines("All-to-all on " + provider + ", one host: median time (pairwise solid, sequential dashed)",
                "us (log)", xs, series, true, dashed, "members (log)");
        ImageIO.write(img, "png", out.toAbsolutePath().getParent().resolve("collectives.png").toFile());
        System.out.print(md);
    }

    private static Point find(List<Point> points, int n, int b, AllToAllAlgorithm a) {
        return points.stream().filter(p -> p.members() == n && p.block() == b && p.algorithm() == a).findFirst().orElse(null);
    }
}
