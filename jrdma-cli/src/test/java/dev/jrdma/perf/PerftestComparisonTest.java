package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The parts of the perftest comparison that run outside the VM: reading both tools' output,
 * the medians, jrdma's warm-up per case, and the two plots (the comparison itself needs perftest
 * and rxe, so it runs only from scripts/bench-vs-perftest).
 */
class PerftestComparisonTest {
    private static final PerftestComparison.Case READ_LAT = new PerftestComparison.Case("read_lat", 2, 2000);
    private static final PerftestComparison.Case WRITE_BW = new PerftestComparison.Case("write_bw", 4096, 5000);

    @Test
    void readsPerftestsTypicalAndTailsAndItsAverageBandwidth() {
        // Lines as ib_read_lat and ib_write_bw 6.x print them (tabs and spaces mixed).
        List<String> lat = List.of(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]",
                " 2       2000          33.10          341.88       34.01    \t       36.37       \t16.05  \t\t98.02   \t\t336.78 ");
        assertArrayEquals(new double[] {34.01, 98.02, 336.78}, PerftestComparison.parsePerftest(lat, READ_LAT));
        List<String> bw = List.of(" 4096       5000             38.94              35.81  \t\t   0.009168");
        assertEquals(35.81, PerftestComparison.parsePerftest(bw, WRITE_BW)[PerftestComparison.TYPICAL]);
        // Another size's row, or no row at all, is no result.
        assertTrue(Double.isNaN(PerftestComparison.parsePerftest(bw, READ_LAT)[0]));
        assertTrue(Double.isNaN(PerftestComparison.parsePerftest(List.of("Couldn't connect to 10.77.0.1:20001"), WRITE_BW)[0]));
    }

    @Test
    void readsJrdmaPerfsCsv() {
        List<String> lat = List.of("test,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p50_us,p99_us,p99_9_us,max_us",
                "read_lat,2,2000,37.890,14774.480,39.610,80.300,384.620,39.610,1130.060,2465.390,14774.480");
        assertArrayEquals(new double[] {39.61, 1130.06, 2465.39}, PerftestComparison.parseJrdma(lat, READ_LAT));
        List<String> bw = List.of("test,bytes,iterations,bw_peak_MBps,bw_avg_MBps,msg_rate_Mpps", "write_bw,4096,5000,24.960,23.040,0.005898");
        assertEquals(23.04, PerftestComparison.parseJrdma(bw, WRITE_BW)[PerftestComparison.TYPICAL]);
        assertTrue(Double.isNaN(PerftestComparison.parseJrdma(List.of("jrdma perf: connecting to /10.77.0.1:20002: refused"), WRITE_BW)[0]));
    }

    @Test
    void theMedianLeavesOutRoundsWithoutAResult() {
        double n = Double.NaN;
        assertEquals(2.0, PerftestComparison.median(new double[][] {{3, n, n}, {n, n, n}, {1, n, n}, {2, n, n}}, 0));
        assertEquals(2.5, PerftestComparison.median(new double[][] {{3, n, n}, {2, n, n}}, 0));
        assertTrue(Double.isNaN(PerftestComparison.median(new double[][] {{n, n, n}}, 0)));
    }

    @Test
    void jrdmaWarmsUpLongEnoughForTheJitButNotForMinutes() {
        assertEquals(PerftestComparison.JIT_WARM_UP, READ_LAT.jrdmaWarmUp());
        // A ping-pong is bound by the vCPU switch: its own default (as many as measured).
        assertEquals(2000, new PerftestComparison.Case("write_lat", 2, 2000).jrdmaWarmUp());
        assertEquals(16384, WRITE_BW.jrdmaWarmUp());                                          // 64 MiB of 4 KiB
        assertEquals(2000, new PerftestComparison.Case("write_bw", 65536, 2000).jrdmaWarmUp());   // its default is more
        assertEquals(300, new PerftestComparison.Case("read_bw", 1 << 20, 300).jrdmaWarmUp());
        assertEquals(PerftestComparison.JIT_WARM_UP, new PerftestComparison.Case("atomic_bw", 8, 5000).jrdmaWarmUp());
    }

    @Test
    void plotsDrawBothToolsAndSurviveACaseWithoutAResult() {
        double n = Double.NaN;
        Map<PerftestComparison.Case, double[][][]> got = new LinkedHashMap<>();
        got.put(READ_LAT, new double[][][] {{{34, 98, 336}}, {{39, 1130, 2465}}});
        got.put(new PerftestComparison.Case("write_lat", 2, 2000), new double[][][] {{{3995, 4100, 4200}}, {{n, n, n}}});
        got.put(WRITE_BW, new double[][][] {{{35.8, n, n}}, {{23.0, n, n}}});
        got.put(new PerftestComparison.Case("write_bw", 1 << 20, 300), new double[][][] {{{23, n, n}}, {{22, n, n}}});
        got.put(new PerftestComparison.Case("atomic_bw", 8, 5000), new double[][][] {{{0.23, n, n}}, {{n, n, n}}});
        BufferedImage lat = PerftestComparison.latencyPlot(got), bw = PerftestComparison.bandwidthPlot(got);
        // Both tools' hues are on the latency plot (blue for perftest, orange for jrdma).
        assertTrue(has(lat, 0x4c72b0) && has(lat, 0xdd8452), "both tools' typical bars");
        assertTrue(has(bw, 0x4c72b0), "perftest's write_bw line");
        assertTrue(has(bw, 0xdd8452), "the atomic_bw series' colour");
    }

    /** The report lists each run's transport retries beside its figure; a device without counters gives -1. */
    @Test
    void theReportShowsTheRetriesOfEveryRun(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        double n = Double.NaN;
        Map<PerftestComparison.Case, double[][][]> got = new LinkedHashMap<>();
        got.put(WRITE_BW, new double[][][] {{{35.8, n, n, 0}, {36.1, n, n, 2}}, {{33.0, n, n, 14}, {n, n, n, n}}});
        java.nio.file.Path out = dir.resolve("vs.md");
        PerftestComparison.write(out, got, 2, 2, "rxe0", "rxe1", 1.0);
        String md = java.nio.file.Files.readString(out);
        assertTrue(md.contains("| perftest retries | jrdma retries |"), md);
        // perftest: 1 retry per 5000 operations (median of 0 and 2); jrdma: 14 per 5000 + 16384 of warm-up.
        assertTrue(md.contains("| write_bw | 4096 | 35.80, 36.10 | 33.00, - | 0, 2 | 14, - | 0.20 / 0.65 |"), md);
        assertEquals(-1, PerftestComparison.retries("no-such-device"));
    }

    private static boolean has(BufferedImage img, int rgb) {
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                if ((img.getRGB(x, y) & 0xffffff) == rgb) {
                    return true;
                }
            }
        }
        return false;
    }
}
