package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code jrdma perf} on the software providers: every test end to end, the output formats, and bad input. */
class PerfCommandTest {
    record Run(int code, String out, String err) {
    }

    static Run perf(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int code = PerfCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The numbers of one JSON field across the results. */
    static List<Double> field(String json, String name) {
        List<Double> v = new ArrayList<>();
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\":([0-9.eE+-]+)").matcher(json);
        while (m.find()) {
            v.add(Double.parseDouble(m.group(1)));
        }
        return v;
    }

    @ParameterizedTest
    @CsvSource({"write_lat,tcp", "read_lat,tcp", "send_lat,tcp", "atomic_lat,tcp", "write_bw,tcp", "read_bw,tcp", "send_bw,tcp",
            "atomic_bw,tcp", "write_lat,shm", "read_lat,shm", "send_lat,shm", "atomic_lat,shm", "write_bw,shm", "read_bw,shm",
            "send_bw,shm", "atomic_bw,shm"})
    void everyTestRunsEndToEndOverLoopback(String test, String provider) {
        Run r = perf(test, "--provider", provider, "--loopback", "-n", "300", "-s", test.startsWith("atomic") ? "8" : "4096", "--json");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("\"test\":\"" + test + "\"") && r.out().contains("\"provider\":\"" + provider + "\""), r.out());
        assertEquals(List.of(test.startsWith("atomic") ? 8.0 : 4096.0), field(r.out(), "bytes"));
        assertEquals(List.of(300.0), field(r.out().substring(r.out().indexOf("\"results\"")), "iterations"));
        if (test.endsWith("_lat")) {
            double min = field(r.out(), "t_min_us").get(0), p50 = field(r.out(), "p50_us").get(0);
            double p99 = field(r.out(), "p99_us").get(0), max = field(r.out(), "max_us").get(0);
            assertTrue(min > 0 && min <= p50 && p50 <= p99 && p99 <= max, r.out());
        } else {
            double avg = field(r.out(), "bw_avg_MBps").get(0), peak = field(r.out(), "bw_peak_MBps").get(0);
            assertTrue(avg > 0 && peak >= avg && field(r.out(), "msg_rate_Mpps").get(0) > 0, r.out());
        }
    }

    @Test
    void allSizesAndTheTableAndCsv() {
        Run all = perf("write_lat", "--provider", "shm", "--loopback", "-a", "-n", "50", "--csv");
        assertEquals(0, all.code(), all.err());
        String[] lines = all.out().strip().split("\n");
        assertEquals("test,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p50_us,p99_us,p99_9_us,max_us", lines[0]);
        assertEquals(23, lines.length - 1, "2 B .. 8 MiB");
        assertTrue(lines[1].startsWith("write_lat,2,50,") && lines[23].startsWith("write_lat,8388608,50,"), all.out());
        Run table = perf("read_bw", "--provider", "tcp", "--loopback", "-n", "200", "-s", "1024");
        assertEquals(0, table.code(), table.err());
        assertTrue(table.out().contains("RDMA_Read BW Test") && table.out().contains("BW average[MB/sec]")
                && table.out().contains("MsgRate[Mpps]") && table.out().contains(" 1024 "), table.out());
    }

    /**
     * send_bw keeps -t sends in flight when the server has receives for them: its server posts
     * 512 (perftest's depth) while they take at most 64 MiB, so 128 at 4 KiB and 64 at 1 MiB.
     */
    /**
     * -l N posts N operations as one Batch: every test moves the same data (the count includes
     * a last, shorter batch when N does not divide it), and the header says so.
     */
    @ParameterizedTest
    @CsvSource({"write_bw,shm", "read_bw,tcp", "send_bw,shm", "atomic_bw,tcp", "write_bw,tcp", "atomic_bw,shm"})
    void postListPostsBatches(String test, String provider) {
        Run r = perf(test, "--provider", provider, "--loopback", "-n", "1003", "-l", "16", "--warmup", "36");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains(" Post List       : 16 (one Batch"), r.out());
        assertTrue(r.out().contains(" 1003 "), r.out());
        Run json = perf(test, "--provider", provider, "--loopback", "-n", "100", "-l", "7", "--json");
        assertEquals(0, json.code(), json.err());
        assertTrue(json.out().contains("\"post_list\":7") && field(json.out(), "bw_avg_MBps").get(0) > 0, json.out());
    }

    /** --use-srq (perftest's): both ends receive in a shared receive queue; the header says so. */
    @ParameterizedTest
    @CsvSource({"send_lat,tcp", "send_bw,shm"})
    void useSrqReceivesInASharedReceiveQueue(String test, String provider) {
        Run r = perf(test, "--provider", provider, "--loopback", "-n", "500", "-s", "1024", "--warmup", "50", "--use-srq");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains(" Use SRQ         : ON"), r.out());
        assertTrue(Pattern.compile("\n 1024 +500 ").matcher(r.out()).find(), r.out());
        Run plain = perf(test, "--provider", provider, "--loopback", "-n", "100", "--warmup", "10");
        assertEquals(0, plain.code(), plain.err());
        assertFalse(plain.out().contains("Use SRQ"), plain.out());
    }

    /**
     * -c UD (perftest's): send_lat and send_bw as datagrams, the connection carrying only the
     * control messages; send_bw says how many the server received. -a stops at what a datagram
     * carries (tcp: 4096). Wrong use is refused naming it.
     */
    @ParameterizedTest
    @CsvSource({"send_lat,tcp", "send_bw,shm", "send_bw,tcp"})
    void connectionTypeUdSendsDatagrams(String test, String provider) {
        Run r = perf(test, "--provider", provider, "--loopback", "-n", "500", "-s", "1024", "--warmup", "50", "-c", "UD");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains(" Connection type : UD (datagrams"), r.out());
        assertTrue(Pattern.compile("\n 1024 +500 ").matcher(r.out()).find(), r.out());
        if (test.equals("send_bw")) {
            Matcher delivered = Pattern.compile("\n 1024 +500 .* (\\d+)\n").matcher(r.out());
            assertTrue(delivered.find(), r.out());
            long got = Long.parseLong(delivered.group(1));
            assertTrue(got > 0 && got <= 500, "the server received some of the 500, never more: " + got);
            Run json = perf(test, "--provider", provider, "--loopback", "-n", "100", "-s", "64", "--warmup", "10", "-c", "UD", "--json");
            assertEquals(0, json.code(), json.err());
            assertTrue(json.out().contains("\"connection\":\"UD\"") && json.out().contains("\"delivered\":"), json.out());
        } else {
            Run all = perf(test, "--provider", provider, "--loopback", "-n", "20", "--warmup", "10", "-c", "UD", "-a");
            assertEquals(0, all.code(), all.err());
            assertTrue(all.out().contains("\n 4096 ") && !all.out().contains("\n 8192 "), "up to 4096 B: " + all.out());
        }
        Run rc = perf(test, "--provider", provider, "--loopback", "-n", "100", "--warmup", "10");
        assertEquals(0, rc.code(), rc.err());
        assertTrue(rc.out().contains(" Connection type : RC\n"), rc.out());
    }

    /**
     * -e (perftest's): both ends sleep on completion events when idle (one IO loop the perf thread
     * drives) instead of busy-polling; the header says which. write_lat waits on memory and is refused.
     */
    @ParameterizedTest
    @CsvSource({"send_lat,tcp", "read_lat,shm", "atomic_lat,tcp", "send_bw,shm"})
    void eventsSleepOnCompletionEvents(String test, String provider) {
        Run r = perf(test, "--provider", provider, "--loopback", "-n", "300", "--warmup", "50", "-e");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains(" Completions     : events (-e"), r.out());
        assertTrue(Pattern.compile("\n \\d+ +300 ").matcher(r.out()).find(), r.out());
        assertUsage(perf("write_lat", "-e"), "-e: write_lat waits for the peer's write in memory");
        assertUsage(perf("send_lat", "-e", "-c", "UD"), "-e is for RC connections, not -c UD");
    }

    @Test
    void connectionTypeUdRefusesWhatItCannotRun() {
        assertUsage(perf("write_lat", "-c", "UD"), "-c UD carries sends only: send_lat or send_bw, not write_lat");
        assertUsage(perf("send_lat", "-c", "XRC"), "-c XRC: jrdma perf runs RC (connections) and UD (datagrams)");
        assertUsage(perf("send_lat", "-c"), "-c needs a value");
        assertUsage(perf("send_bw", "-c", "UD", "-s", "8192"), "-c UD sends at most a path MTU (4096 bytes at most), not 8192");
        assertUsage(perf("send_bw", "-c", "UD", "--use-srq"), "-c UD: --use-srq is for RC connections");
        assertUsage(perf("send_bw", "-c", "UD", "-l", "4"), "-c UD: -l is for RC connections");
    }

    @Test
    void sendBandwidthKeepsInFlightWhatTheServersReceivesAllow() {
        Run small = perf("send_bw", "--provider", "shm", "--loopback", "-n", "300", "-s", "4096");
        assertEquals(0, small.code(), small.err());
        assertTrue(small.out().contains(" TX depth        : 128\n"), small.out());
        Run big = perf("send_bw", "--provider", "shm", "--loopback", "-n", "100", "-s", "1048576", "-t", "100");
        assertEquals(0, big.code(), big.err());
        assertTrue(big.out().contains(" TX depth        : 64\n"), "64 receives of 1 MiB: " + big.out());
        Run few = perf("send_bw", "--provider", "tcp", "--loopback", "-n", "300", "-s", "4096", "-t", "16");
        assertEquals(0, few.code(), few.err());
        assertTrue(few.out().contains(" TX depth        : 16\n"), few.out());
    }

    @Test
    void aServerAndAClientInTwoCommands() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> perf("send_lat", "--provider", "tcp", "-p",
                String.valueOf(port), "--bind", "127.0.0.1", "-s", "512"));
        Run client = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {   // until the server listens
            client = perf("send_lat", "--provider", "tcp", "-p", String.valueOf(port), "-s", "512", "-n", "200", "127.0.0.1");
            if (client.code() == 0) {
                break;
            }
            Thread.sleep(100);
        }
        assertEquals(0, client.code(), client.err());
        assertTrue(client.out().contains("Send Latency Test") && client.out().contains(" 512 "), client.out());
        assertEquals(0, server.get(30, TimeUnit.SECONDS).code(), server.get().err());
    }

    /** A -c UD client of a -c RC server (two commands): the server refuses by name, the client fails. */
    @Test
    void aServerAndAClientOfOtherConnectionTypesRefuseEachOther() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> perf("send_lat", "--provider", "tcp", "-p",
                String.valueOf(port), "--bind", "127.0.0.1"));
        Run client = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {   // until the server listens
            client = perf("send_lat", "--provider", "tcp", "-p", String.valueOf(port), "-n", "20", "-c", "UD", "127.0.0.1");
            if (!client.err().contains("refused")) {
                break;
            }
            Thread.sleep(100);
        }
        assertEquals(1, client.code(), client.out() + client.err());
        Run s = server.get(90, TimeUnit.SECONDS);
        assertEquals(1, s.code(), s.err());
        assertTrue(s.err().contains("the client runs -c UD, this server -c RC: give both ends the same -c"), s.err());
    }

    @Test
    void badInputIsRefusedWithWhatIsWrong() throws Exception {
        assertUsage(perf(), "which test");
        assertUsage(perf("write_latency"), "unknown test 'write_latency'");
        assertUsage(perf("atomic_lat", "-s", "16"), "atomic_lat moves 8 bytes, not 16");
        assertUsage(perf("write_bw", "-a", "-s", "64"), "-a and -s 64");
        assertUsage(perf("write_lat", "--loopback", "10.0.0.1"), "--loopback runs both ends here");
        assertUsage(perf("write_lat", "-n", "many"), "-n takes a number, not 'many'");
        assertUsage(perf("write_lat", "-p", "70000"), "-p must be in 0..65535");
        assertUsage(perf("send_bw", "-s", String.valueOf(2 << 20)), "send_bw sends at most 1048576 bytes");
        assertUsage(perf("write_lat", "--frobnicate"), "unknown option --frobnicate");
        // Nobody listens there: the client fails (exit 1) and says so.
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Run nobody = perf("write_lat", "--provider", "tcp", "-p", String.valueOf(port), "127.0.0.1");
        assertEquals(1, nobody.code());
        assertTrue(nobody.err().startsWith("jrdma perf: ") && nobody.err().contains("refused"), nobody.err());
        assertEquals(1, nobody.err().split("jrdma perf: ", -1).length - 1, "one prefix: " + nobody.err());
        // A message bigger than the server's receive buffers (its own -s is 2): refused before sending.
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        String p = String.valueOf(port);
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> perf("send_lat", "--provider", "tcp", "-p", p, "--bind", "127.0.0.1"));
        Run big = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            big = perf("send_lat", "--provider", "tcp", "-p", p, "-s", "4096", "-n", "10", "127.0.0.1");
            if (!big.err().contains("refused")) {
                break;
            }
            Thread.sleep(100);
        }
        assertEquals(1, big.code());
        assertTrue(big.err().contains("exceeds the peer's receive buffer"), big.err());
        server.get(90, TimeUnit.SECONDS);   // it ends when the client's connection does
    }

    @Test
    void plotsLatencyPercentilesAndBandwidthBySize(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path lat = dir.resolve("lat.png"), one = dir.resolve("sub/one.png"), bw = dir.resolve("bw.png");
        Run a = perf("write_lat", "--provider", "shm", "--loopback", "-a", "-n", "20", "--plot", lat.toString());
        assertEquals(0, a.code(), a.err());
        assertTrue(a.out().contains("Plot written to " + lat.toAbsolutePath()), a.out());
        Run b = perf("read_lat", "--provider", "tcp", "--loopback", "-n", "50", "--plot", one.toString(), "--json");
        assertEquals(0, b.code(), b.err());
        assertTrue(b.out().startsWith("{") && !b.out().contains("Plot written"), "JSON stays machine-readable: " + b.out());
        assertTrue(b.err().contains("Plot written to " + one.toAbsolutePath()), b.err());
        Run c = perf("write_bw", "--provider", "shm", "--loopback", "-n", "50", "-a", "--plot", bw.toString(), "--csv");
        assertEquals(0, c.code(), c.err());
        for (java.nio.file.Path png : List.of(lat, one, bw)) {
            java.awt.image.BufferedImage img = javax.imageio.ImageIO.read(png.toFile());
            assertTrue(img != null && img.getWidth() > 400 && img.getHeight() > 300, png + " is a PNG image");
            // Something was drawn besides the white background and black axes: the series' colours.
            boolean coloured = false;
            for (int x = 0; x < img.getWidth() && !coloured; x += 2) {
                for (int y = 0; y < img.getHeight() && !coloured; y += 2) {
                    int rgb = img.getRGB(x, y) & 0xffffff, r = rgb >> 16, g = (rgb >> 8) & 0xff, bl = rgb & 0xff;
                    coloured = Math.max(r, Math.max(g, bl)) - Math.min(r, Math.min(g, bl)) > 60;
                }
            }
            assertTrue(coloured, png + " has its data drawn in colour");
        }
    }

    /**
     * --jfr: the client's process is recorded; the file holds the JVM's events and jrdma's, the
     * sampled operation latencies included (off in a recording that does not ask for them).
     */
    @Test
    void jfrRecordsTheRunWithJrdmasEvents(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = dir.resolve("run.jfr");
        Run r = perf("write_lat", "--provider", "shm", "--loopback", "-n", "500", "--warmup", "100", "--jfr", file.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.err().contains("JFR recording written to " + file.toAbsolutePath()), r.err());
        java.util.Map<String, Integer> counts = new java.util.TreeMap<>();
        long writes = 0;
        for (jdk.jfr.consumer.RecordedEvent e : jdk.jfr.consumer.RecordingFile.readAllEvents(file)) {
            counts.merge(e.getEventType().getName(), 1, Integer::sum);
            if (e.getEventType().getName().equals("dev.jrdma.OperationLatency") && e.getString("operation").equals("write")) {
                writes++;
                assertTrue(e.getLong("latency") > 0, "a latency is positive: " + e);
                assertEquals(2, e.getLong("bytes"), "write_lat's default size: " + e);
            }
        }
        assertTrue(counts.getOrDefault("dev.jrdma.ConnectionEstablished", 0) >= 1, counts.toString());
        assertTrue(counts.getOrDefault("dev.jrdma.ConnectionClosed", 0) >= 1, counts.toString());
        assertTrue(counts.getOrDefault("dev.jrdma.RegionRegistered", 0) >= 1, counts.toString());
        // 600 writes (100 warm-up, 500 timed) on the client: one in LATENCY_SAMPLE_EVERY sampled.
        assertTrue(writes >= 600 / dev.jrdma.ConnectionStatistics.LATENCY_SAMPLE_EVERY, writes + " sampled write latencies; " + counts);
        assertTrue(counts.getOrDefault("jdk.JVMInformation", 0) > 0, "the JVM's default events are there too: " + counts);
        assertUsage(perf("write_lat", "--loopback", "--jfr", "out.txt"), "--jfr writes a Flight Recorder file");
        assertEquals(List.of("write_lat", "-p", "0", "--loopback-server"),
                PerfCommand.serverArgs(new String[] {"write_lat", "--loopback", "--jfr", "x.jfr"}), "the server records nothing");
    }

    @Test
    void gidIndexAndPlotOptionsAreChecked() {
        assertUsage(perf("write_lat", "--loopback", "--plot", "out.svg"), "--plot writes a PNG");
        assertUsage(perf("write_lat", "--plot", "out.png"), "--plot is the client's");
        assertUsage(perf("write_lat", "-x", "300"), "-x must be in 0..255");
        assertUsage(perf("write_lat", "--warmup", "-1"), "--warmup must be in 0..100000000");
        assertUsage(perf("read_bw", "-u", "0"), "-u must be in 1..31, not 0");
        assertUsage(perf("read_bw", "--qp-timeout", "32"), "--qp-timeout must be in 1..31, not 32");
        assertUsage(perf("write_bw", "-o", "16"), "-o (outstanding reads) is for the read and atomic tests, not write_bw");
        assertUsage(perf("read_bw", "-o", "0"), "-o must be in 1..255, not 0");
        Run outs = perf("read_bw", "--provider", "shm", "--loopback", "-o", "4", "-n", "50");
        assertEquals(0, outs.code(), outs.err());
        assertUsage(perf("write_lat", "-l", "8"), "-l (post list) is for the bandwidth tests, not write_lat");
        assertUsage(perf("write_bw", "-l", "64", "-t", "32"), "-l 64 is more than -t 32 allows in flight");
        // Software transports have no ack timeout: -u is accepted and the report says there is none.
        Run u = perf("read_bw", "--provider", "tcp", "--loopback", "-u", "20", "-n", "20", "--json");
        assertEquals(0, u.code(), u.err());
        assertTrue(u.out().contains("\"ack_timeout\":-1"), u.out());
        // -u cm leaves it to the connection manager, as the library's default ConnectionConfig does.
        Run cm = perf("read_lat", "--provider", "tcp", "--loopback", "-u", "cm", "-n", "20", "--warmup", "0");
        assertEquals(0, cm.code(), cm.err());
        assertUsage(perf("read_lat", "-u", "cms"), "-u takes 1..31 or cm, not 'cms'");
        assertFalse(perf("read_lat", "--provider", "shm", "--loopback", "-n", "20").out().contains("QP ack timeout"));
        Run noWarmUp = perf("read_lat", "--provider", "tcp", "--loopback", "--warmup", "0", "-n", "20", "--json");
        assertEquals(0, noWarmUp.code(), noWarmUp.err());
        assertEquals(List.of(20.0), field(noWarmUp.out().substring(noWarmUp.out().indexOf("\"results\"")), "iterations"));
        // A GID index on a software provider: a clear failure, not a silent fallback.
        Run x = perf("write_lat", "--provider", "shm", "--loopback", "-x", "1", "-n", "10");
        assertEquals(1, x.code());
        assertTrue(x.err().contains("-x 1 names a GID of an RDMA device, but this run's provider is shm"), x.err());
    }

    private static void assertUsage(Run r, String says) {
        assertEquals(2, r.code(), r.err());
        assertTrue(r.err().contains(says), r.err());
        assertTrue(r.err().contains("usage: jrdma perf"), r.err());
    }

    /**
     * The main job measures the library's steady state: untimed rounds until the figure settles
     * with the JIT idle, and the header says what the warm-up did; --warmup N runs N instead.
     * The loopback's server is a process of its own, gone when the run ends.
     */
    @Test
    void theWarmUpRunsUntilTheFigureSettlesAndTheHeaderSaysSo() {
        Run table = perf("write_lat", "--provider", "shm", "--loopback", "-n", "1000", "-s", "8");
        assertEquals(0, table.code(), table.err());
        assertTrue(table.out().contains(" Warm-up         : untimed rounds until the typical latency held within 5% with the JIT"
                + " idle; 8 B: "), table.out());
        assertTrue(table.out().contains(" iterations, settled"), table.out());
        Run json = perf("read_lat", "--provider", "tcp", "--loopback", "-n", "500", "--json");
        assertEquals(0, json.code(), json.err());
        assertTrue(json.out().contains("\"warmup_settled\":true"), json.out());
        assertTrue(field(json.out(), "warmup_iterations").get(0) >= WarmUp.MIN_ITERATIONS, json.out());
        assertTrue(field(json.out(), "warmup_s").get(0) >= WarmUp.MIN_NANOS / 1e9, json.out());
        Run counted = perf("read_lat", "--provider", "tcp", "--loopback", "-n", "100", "--warmup", "37", "--json");
        assertEquals(0, counted.code(), counted.err());
        assertEquals(List.of(37.0), field(counted.out(), "warmup_iterations"));
        assertTrue(counted.out().contains("\"warmup_settled\":false"), counted.out());
        assertEquals(0, ProcessHandle.current().children().filter(ProcessHandle::isAlive).count(),
                "the loopback's server processes ended with their runs");
    }

    @Test
    void theLoopbacksServerGetsTheServersPartOfTheCommandLine() {
        assertEquals(List.of("write_lat", "--provider", "shm", "-n", "5", "-p", "0", "--loopback-server"),
                PerfCommand.serverArgs(new String[] {"write_lat", "--provider", "shm", "--loopback", "-n", "5", "--json",
                    "--plot", "x.png"}));
        assertEquals(List.of("read_lat", "-p", "7000", "--bind", "10.0.0.1", "--loopback-server"),
                PerfCommand.serverArgs(new String[] {"read_lat", "-p", "7000", "--bind", "10.0.0.1", "--loopback"}));
        assertEquals(new java.net.InetSocketAddress("127.0.0.1", 41234), PerfCommand.parseAddress("/127.0.0.1:41234"));
        assertEquals(new java.net.InetSocketAddress("10.77.0.1", 18515), PerfCommand.parseAddress("host/10.77.0.1:18515"));
        assertUsage(perf("write_lat", "--loopback-server", "10.0.0.1"), "--loopback-server is the server of a --loopback run");
    }

    /**
     * write_lat at 512 KiB warms up in rounds of 128, whose last mark (127 % 127 + 1) is the
     * next run's first: the two ends must not take the mark left from the round before for the
     * peer's (they forget it before each run). Without that, both waited for each other until
     * the 60 s idle limit, every time.
     */
    @Test
    void aPingPongRunDoesNotTakeTheLastRunsMarkForItsFirst() {
        Run r = perf("write_lat", "--provider", "shm", "--loopback", "-s", "524288", "-n", "300", "--json");
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of(524288.0), field(r.out(), "bytes"));
    }

    @Test
    void jsonEscapesWhatADriverPutInADeviceName() {
        PerfOptions o = PerfOptions.parse(new String[] {"write_lat", "--json", "-n", "5", "127.0.0.1"});
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PerfReport.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), o,
                new RunFacts("tcp", "odd\"dev\\0\n\u0001", 1, -1),
                List.of(new PerfClient.Result(2, 5, LatencyStats.of(new long[] {1000, 2000, 3000, 4000, 5000}, 1), 0, 0, 0)));
        String json = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"test\":\"write_lat\",\"provider\":\"tcp\",\"device\":\"odd\\\"dev\\\\0\\n\\u0001\","),
                json);
        assertEquals("null", PerfReport.jsonString(null));
    }

    @Test
    void progressOnlyOnATerminal() {
        assertEquals(null, PerfCommand.progressTo(System.err, null), "no console: no progress line");
        java.io.Console console = System.console();
        PrintStream to = PerfCommand.progressTo(System.err, console);
        assertEquals(console != null && console.isTerminal(), to != null, "Maven's test JVM runs without a terminal");
    }
}
