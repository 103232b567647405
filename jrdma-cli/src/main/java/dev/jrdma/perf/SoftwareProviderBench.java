package dev.jrdma.perf;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The software providers measured against their anchors in one run, rounds alternating, both
 * ends on this host, each end in its own process. tcp: the 8-byte write ping-pong against a
 * plain NIO ping-pong and UCX over tcp, 1 MiB write bandwidth against iperf3's single stream.
 * shm: the 8-byte write ping-pong against two JVMs spinning on one mapping (the floor) and UCX
 * posix, 1 MiB write bandwidth against a single-core MemorySegment.copy. Writes a Markdown
 * report with medians and ratios.
 *
 * <pre>
 *   java -cp ... dev.jrdma.perf.SoftwareProviderBench [--rounds 5] [--only tcp|shm] [--out bench/software-providers.md]
 * </pre>
 * {@code --only} measures one provider's rows (the other table is left out), for quick looks.
 */
public final class SoftwareProviderBench {
    /**
     * Iterations per latency run: enough that the second half runs C2-compiled code (with 20 000
     * the shm ping-pong measured 1.2 us, still warming up; with a million, 0.2 us).
     */
    private static final int TCP_ITERATIONS = 100_000, BW_SIZE = 1 << 20, BW_COUNT = 2_000;

    private SoftwareProviderBench() {
    }

    /** One round; shmLatUs and shmRatio are ALWAYS writes', the last two ON_ERROR writes' (PairedShmPingPong). */
    record Round(double jrdmaLatUs, double nioLatUs, double jrdmaBw, double iperfBw, double ucxLatUs,
                 double shmLatUs, double rawShmLatUs, double shmRatio, double ucxPosixLatUs, double shmBw, double copyBw,
                 double aeronLatUs, double shmOnErrorLatUs, double shmOnErrorRatio) {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--role")) {
            role(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        int rounds = 5;
        Path out = null;
        String only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                case "--only" -> only = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (usage: SoftwareProviderBench [--rounds N] [--only tcp|shm] [--out FILE])");
            }
        }
        if (only != null && !only.equals("tcp") && !only.equals("shm")) {
            throw new IllegalArgumentException("--only takes tcp or shm, not " + only);
        }
        boolean tcp = only == null || only.equals("tcp"), shm = only == null || only.equals("shm");
        double nan = Double.NaN;
        List<Round> all = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            double jl = nan, nl = nan, jb = nan, ib = nan, ul = nan;
            if (tcp) {
                jl = median(clientOf(new String[] {"write_lat", "tcp"},
                        port -> JrdmaLoopback.writeLatency("tcp", port, TCP_ITERATIONS)));
                nl = median(clientOf(new String[] {"nio"}, port -> NioPingPong.pingPong(port, TCP_ITERATIONS)));
                jb = bandwidth("tcp");
                ib = iperf3();
                ul = ucxLatency("am_lat", "tcp", "lo", "tcp");
            }
            double sl = nan, rl = nan, sr = nan, up = nan, sb = nan, cb = nan, al = nan, so = nan, sor = nan;
            if (shm) {
                Path flag = Path.of("/dev/shm/jrdma-bench-" + ProcessHandle.current().pid());
                Files.deleteIfExists(flag);
                long[] paired = clientOf(new String[] {"shm_paired", flag.toString()},
                        port -> PairedShmPingPong.pingPong(port, flag));
                sl = PairedShmPingPong.median(paired, PairedShmPingPong.ALWAYS);
                rl = PairedShmPingPong.median(paired, PairedShmPingPong.RAW);
                sr = PairedShmPingPong.pairedRatio(paired, PairedShmPingPong.ALWAYS);
                so = PairedShmPingPong.median(paired, PairedShmPingPong.ON_ERROR);
                sor = PairedShmPingPong.pairedRatio(paired, PairedShmPingPong.ON_ERROR);
                up = ucxLatency("put_lat", "posix", "memory", "posix,self");
                sb = bandwidth("shm");
                cb = RawShmPingPong.copyBandwidth(BW_SIZE, BW_COUNT);
                al = aeronIpcLatency();
            }
            Round round = new Round(jl / 1e3, nl / 1e3, jb, ib, ul, sl / 1e3, rl / 1e3, sr, up, sb, cb, al, so / 1e3, sor);
            System.err.printf(Locale.ROOT, "round %d: tcp RTT %.2f us (NIO %.2f, UCX %.2f), tcp 1 MiB write %.0f MB/s"
                    + " (iperf3 %.0f); shm RTT %.3f us (raw %.3f, paired ratio %.2f; ON_ERROR %.3f, paired %.2f; UCX posix %.3f,"
                    + " Aeron IPC %.3f), shm 1 MiB write %.0f MB/s (copy %.0f)%n", r + 1, round.jrdmaLatUs(), round.nioLatUs(),
                    round.ucxLatUs(), jb / 1e6, ib / 1e6, round.shmLatUs(), round.rawShmLatUs(), sr, so / 1e3, sor, up, al,
                    sb / 1e6, cb / 1e6);
            all.add(round);
        }
        String report = report(all);
        System.out.print(report);
        if (out != null) {
            Files.createDirectories(out.toAbsolutePath().getParent());
            Files.writeString(out, report);
            System.err.println("wrote " + out);
        }
    }

    interface Client {
        long[] run(int port) throws Exception;
    }

    private static double bandwidth(String provider) throws Exception {
        double[] bw = new double[1];
        clientOf(new String[] {"write_bw", provider}, port -> {
            bw[0] = JrdmaLoopback.writeBandwidth(provider, port, BW_SIZE, BW_COUNT);
            return new long[] {1};
        });
        return bw[0];
    }

    /** Starts the server role {@code role} in a child JVM, runs {@code client} against it. */
    private static long[] clientOf(String[] role, Client client) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = location(dev.jrdma.Rdma.class) + File.pathSeparator + location(SoftwareProviderBench.class);
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                SoftwareProviderBench.class.getName(), "--role"));
        command.addAll(List.of(role));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = r.readLine();
            if (line == null || !line.startsWith("ready ")) {
                throw new IllegalStateException(String.join(" ", role) + " server did not start: " + line);
            }
            return client.run(Integer.parseInt(line.substring(6).trim()));
        } finally {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    private static void role(String[] args) throws Exception {
        switch (args[0]) {
            case "write_lat" -> JrdmaLoopback.serve(args[1], "write_lat", 8);
            case "write_bw" -> JrdmaLoopback.serve(args[1], "write_bw", BW_SIZE);
            case "nio" -> NioPingPong.serve();
            case "shm_paired" -> PairedShmPingPong.serve(Path.of(args[1]));
            default -> throw new IllegalArgumentException("unknown role " + args[0]);
        }
    }

    /** Median of the second half (the first is the JIT's warm-up), in ns. */
    private static double median(long[] ns) {
        long[] steady = Arrays.copyOfRange(ns, ns.length / 2, ns.length);
        Arrays.sort(steady);
        return steady[steady.length / 2];
    }

    private static double median(List<Round> rounds, java.util.function.ToDoubleFunction<Round> f) {
        double[] v = rounds.stream().mapToDouble(f).filter(x -> !Double.isNaN(x)).sorted().toArray();
        return v.length == 0 ? Double.NaN : v[v.length / 2];
    }

    /** iperf3 single stream over loopback for 3 s, received bytes per second; NaN when iperf3 is missing. */
    private static double iperf3() throws Exception {
        if (!onPath("iperf3")) {
            return Double.NaN;
        }
        int port = freePort();
        Process server = new ProcessBuilder("iperf3", "-s", "-1", "-p", String.valueOf(port), "-B", "127.0.0.1")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            Thread.sleep(300);
            String json = run(List.of("iperf3", "-c", "127.0.0.1", "-p", String.valueOf(port), "-t", "3", "-J"), 30);
            Matcher m = Pattern.compile("\"sum_received\"\\s*:\\s*\\{[^}]*\"bits_per_second\"\\s*:\\s*([0-9.eE+]+)")
                    .matcher(json);
            return m.find() ? Double.parseDouble(m.group(1)) / 8 : Double.NaN;
        } finally {
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /** A UCX 8-byte latency test over one transport: the round trip in us (ucx_perftest prints one-way). */
    private static double ucxLatency(String test, String transport, String device, String tls) throws Exception {
        if (!onPath("ucx_perftest")) {
            return Double.NaN;
        }
        int port = freePort();
        ProcessBuilder sb = new ProcessBuilder("ucx_perftest", "-p", String.valueOf(port));
        sb.environment().put("UCX_TLS", tls);
        Process server = sb.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            Thread.sleep(500);
            ProcessBuilder cb = new ProcessBuilder("ucx_perftest", "127.0.0.1", "-p", String.valueOf(port), "-t", test,
                    "-x", transport, "-d", device, "-s", "8", "-n", "100000");
            cb.environment().put("UCX_TLS", tls);
            Process c = cb.redirectErrorStream(true).start();
            String text = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            c.waitFor(60, TimeUnit.SECONDS);
            // The final line: "Final: <iterations> <typical> <avg> <overall> ..." latencies in usec, one-way.
            for (String line : text.split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 2 && f[0].equals("Final:")) {
                    return 2 * Double.parseDouble(f[2]);
                }
            }
            System.err.println("ucx_perftest printed no Final line:\n" + text);
            return Double.NaN;
        } finally {
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /**
     * Aeron's own IPC ping-pong (io.aeron.samples.Ping/Pong, 32-byte messages, its minimum with
     * the timestamp) between two JVMs through a media driver in a third: the median RTT in us.
     * NaN when no Aeron jar was given ({@code -Djrdma.bench.aeron=PATH}, which the script sets).
     */
    private static double aeronIpcLatency() throws Exception {
        String jar = System.getProperty("jrdma.bench.aeron");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            return Double.NaN;
        }
        String javaCmd = ProcessHandle.current().info().command().orElse("java");
        Path dir = Path.of("/dev/shm/jrdma-bench-aeron-" + ProcessHandle.current().pid());
        List<String> base = List.of(javaCmd, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Daeron.dir=" + dir,
                "-Daeron.sample.ping.channel=aeron:ipc", "-Daeron.sample.pong.channel=aeron:ipc", "-cp", jar);
        List<String> driverCmd = new ArrayList<>(base);
        // The driver is not on the IPC data path: let it sleep, so the two spinning ends have the CPUs.
        driverCmd.addAll(List.of("-Daeron.threading.mode=SHARED", "-Daeron.dir.delete.on.shutdown=true",
                "-Daeron.shared.idle.strategy=org.agrona.concurrent.SleepingMillisIdleStrategy", "io.aeron.driver.MediaDriver"));
        List<String> pongCmd = new ArrayList<>(base);
        pongCmd.add("io.aeron.samples.Pong");
        List<String> pingCmd = new ArrayList<>(base);
        pingCmd.addAll(List.of("-Daeron.sample.messages=1000000", "-Daeron.sample.messageLength=32", "io.aeron.samples.Ping"));
        Process driver = new ProcessBuilder(driverCmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        Process pong = null;
        try {
            Thread.sleep(1500);
            pong = new ProcessBuilder(pongCmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Thread.sleep(1500);
            Process ping = new ProcessBuilder(pingCmd).redirectErrorStream(true).start();
            ping.getOutputStream().write("n\n".getBytes(StandardCharsets.UTF_8));   // "Execute again?"
            ping.getOutputStream().close();
            String text = new String(ping.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            ping.waitFor(120, TimeUnit.SECONDS);
            // HdrHistogram rows: "value percentile count 1/(1-p)", values in microseconds.
            for (String line : text.split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (f.length == 4 && f[1].matches("[0-9.]+") && Double.parseDouble(f[1]) >= 0.5) {
                    return Double.parseDouble(f[0]);
                }
            }
            System.err.println("Aeron's Ping printed no percentile table:\n" + text);
            return Double.NaN;
        } finally {
            if (pong != null) {
                pong.destroy();
                pong.waitFor(10, TimeUnit.SECONDS);
            }
            driver.destroy();
            if (!driver.waitFor(10, TimeUnit.SECONDS)) {
                driver.destroyForcibly();
            }
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (java.io.IOException ignored) {
                // gone already
            }
        }
    }

    private static String run(List<String> command, int seconds) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        return text;
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static int freePort() throws Exception {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static String location(Class<?> c) throws Exception {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    private static String report(List<Round> rounds) throws Exception {
        double jl = median(rounds, Round::jrdmaLatUs), nl = median(rounds, Round::nioLatUs);
        double jb = median(rounds, Round::jrdmaBw), ib = median(rounds, Round::iperfBw);
        double ul = median(rounds, Round::ucxLatUs);
        StringBuilder sb = new StringBuilder();
        sb.append("# Software providers against their anchors\n\n");
        sb.append("Run ").append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME)).append(" on ")
                .append(Runtime.getRuntime().availableProcessors()).append(" CPUs, ")
                .append(System.getProperty("os.name")).append(' ').append(System.getProperty("os.version"))
                .append(", JDK ").append(Runtime.version()).append(", host ").append(cpuModel()).append(".\n");
        sb.append("Both ends on loopback, each in its own process with one spinning thread; ").append(rounds.size())
                .append(" rounds, alternating; each number is the median over rounds (a round's latency is the")
                .append(" median of the second half of ").append(TCP_ITERATIONS).append(" iterations for tcp: the first")
                .append(" half is the JIT's warm-up). shm latency and its raw floor run in the same two processes in")
                .append(" alternating blocks of ").append(PairedShmPingPong.BLOCK).append(" round trips (")
                .append(PairedShmPingPong.BLOCKS).append(" blocks in fours: jrdma with every write completing (ALWAYS), raw,")
                .append(" jrdma with writes that report only a failure (ON_ERROR, as UCX's put_lat puts), raw; the first ")
                .append(PairedShmPingPong.WARM_UP_BLOCKS)
                .append(" untimed; a block's round trip is its time over its iterations, no clock read inside, as")
                .append(" ucx_perftest measures): where the hypervisor puts the two vCPUs moves even the raw round trip between")
                .append(" about 0.1 and 0.45 us from run to run, so the ratio is taken per pair of neighbouring blocks,")
                .append(" then the median over pairs and over rounds.\n\n");
        if (!Double.isNaN(jl)) {
            tcpTable(sb, jl, nl, jb, ib, ul);
        }
        double sl = median(rounds, Round::shmLatUs);
        if (!Double.isNaN(sl)) {
            shmTable(sb, rounds);
        }
        sb.append("\nRounds (RTT in us, bandwidth in MB/s):\n\n| round | tcp RTT | NIO | UCX tcp | tcp MB/s | iperf3 |"
                + " shm RTT | raw shm | paired ratio | UCX posix | Aeron IPC | shm MB/s | copy | shm ON_ERROR RTT | ON_ERROR paired ratio |"
                + "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < rounds.size(); i++) {
            Round r = rounds.get(i);
            sb.append(String.format(Locale.ROOT, "| %d | %.2f | %.2f | %.2f | %.0f | %.0f | %.3f | %.3f | %.2f | %.3f | %.3f | %.0f | %.0f"
                    + " | %.3f | %.2f |%n", i + 1, r.jrdmaLatUs(), r.nioLatUs(), r.ucxLatUs(), r.jrdmaBw() / 1e6, r.iperfBw() / 1e6,
                    r.shmLatUs(), r.rawShmLatUs(), r.shmRatio(), r.ucxPosixLatUs(), r.aeronLatUs(), r.shmBw() / 1e6,
                    r.copyBw() / 1e6, r.shmOnErrorLatUs(), r.shmOnErrorRatio()));
        }
        sb.append("\nRegenerate: `scripts/bench-software-providers` (writes this file).\n");
        return sb.toString();
    }

    private static void tcpTable(StringBuilder sb, double jl, double nl, double jb, double ib, double ul) {
        sb.append("| metric | jrdma tcp | anchor | ratio | target | met |\n|---|---|---|---|---|---|\n");
        double latRatio = jl / nl;
        sb.append(String.format(Locale.ROOT, "| 8 B write ping-pong RTT | %.2f us | NIO ping-pong %.2f us | %.2f | <= 1.3 | %s |%n",
                jl, nl, latRatio, latRatio <= 1.3 ? "yes" : "**no**"));
        if (!Double.isNaN(ul)) {
            sb.append(String.format(Locale.ROOT, "| 8 B RTT vs UCX tcp (am_lat x2) | %.2f us | UCX %.2f us | %.2f | < 1 (faster) | %s |%n",
                    jl, ul, jl / ul, jl < ul ? "yes" : "**no**"));
        } else {
            sb.append("| 8 B RTT vs UCX tcp | | ucx_perftest not installed | | < 1 | not measured |\n");
        }
        if (!Double.isNaN(ib)) {
            double bwRatio = jb / ib;
            sb.append(String.format(Locale.ROOT, "| 1 MiB write bandwidth | %.0f MB/s | iperf3 %.0f MB/s | %.2f | >= 0.7 | %s |%n",
                    jb / 1e6, ib / 1e6, bwRatio, bwRatio >= 0.7 ? "yes" : "**no**"));
        } else {
            sb.append(String.format(Locale.ROOT, "| 1 MiB write bandwidth | %.0f MB/s | iperf3 not installed | | >= 0.7 | not measured |%n",
                    jb / 1e6));
        }
    }

    private static void shmTable(StringBuilder sb, List<Round> rounds) {
        double sl = median(rounds, Round::shmLatUs), rl = median(rounds, Round::rawShmLatUs);
        double sr = median(rounds, Round::shmRatio);
        double up = median(rounds, Round::ucxPosixLatUs), sbw = median(rounds, Round::shmBw), cb = median(rounds, Round::copyBw);
        double so = median(rounds, Round::shmOnErrorLatUs), sor = median(rounds, Round::shmOnErrorRatio);
        sb.append("\n| metric | jrdma shm | anchor | ratio | target | met |\n|---|---|---|---|---|---|\n");
        sb.append(String.format(Locale.ROOT, "| 8 B write ping-pong RTT, ALWAYS | %.3f us | raw two-JVM shm ping-pong %.3f us"
                + " (same processes, alternating blocks) | %.2f (paired) | <= 1.4 | %s |%n", sl, rl, sr, sr <= 1.4 ? "yes" : "**no**"));
        sb.append(String.format(Locale.ROOT, "| 8 B write ping-pong RTT, ON_ERROR | %.3f us | the same raw ping-pong | %.2f (paired)"
                + " | <= 1.15 | %s |%n", so, sor, sor <= 1.15 ? "yes" : "**no**"));
        if (!Double.isNaN(up)) {
            sb.append(String.format(Locale.ROOT, "| 8 B ON_ERROR RTT vs UCX posix (put_lat x2) | %.3f us | UCX %.3f us | %.2f"
                    + " | < 1 (faster) | %s |%n", so, up, so / up, so < up ? "yes" : "**no**"));
            sb.append(String.format(Locale.ROOT, "| 8 B ALWAYS RTT vs UCX posix (put_lat x2) | %.3f us | UCX %.3f us | %.2f"
                    + " | (put_lat reports no completions) | |%n", sl, up, sl / up));
        } else {
            sb.append("| 8 B RTT vs UCX posix | | ucx_perftest not installed or failed | | < 1 | not measured |\n");
        }
        double al = median(rounds, Round::aeronLatUs);
        if (!Double.isNaN(al)) {
            sb.append(String.format(Locale.ROOT, "| 8 B ON_ERROR RTT vs Aeron IPC (32 B Ping/Pong) | %.3f us | Aeron %.3f us | %.2f"
                    + " | < 1 (faster) | %s |%n", so, al, so / al, so < al ? "yes" : "**no**"));
            sb.append(String.format(Locale.ROOT, "| 8 B ALWAYS RTT vs Aeron IPC (32 B Ping/Pong) | %.3f us | Aeron %.3f us | %.2f"
                    + " | < 1 (faster) | %s |%n", sl, al, sl / al, sl < al ? "yes" : "**no**"));
        } else {
            sb.append("| 8 B RTT vs Aeron IPC | | no Aeron jar given | | < 1 | not measured |\n");
        }
        sb.append(String.format(Locale.ROOT, "| 1 MiB write bandwidth | %.0f MB/s | single-core MemorySegment.copy %.0f MB/s | %.2f | >= 0.7 | %s |%n",
                sbw / 1e6, cb / 1e6, sbw / cb, sbw / cb >= 0.7 ? "yes" : "**no**"));
    }

    /** The CPU model from /proc/cpuinfo ("unknown CPU" when there is none). */
    static String cpuModel() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (l.startsWith("model name")) {
                    return l.substring(l.indexOf(':') + 1).trim();
                }
            }
        } catch (java.io.IOException ignored) {
            // unknown
        }
        return "unknown CPU";
    }
}
