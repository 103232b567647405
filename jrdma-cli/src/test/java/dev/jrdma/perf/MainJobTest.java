package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's main job, word for word: its first command ({@code bin/jrdma perf ...}) run
 * on the default provider, as a newcomer runs it, printing perftest's latency table for every
 * size and where the plot went.
 */
class MainJobTest {
    /** The first line of the README's first shell block, which must be the main job: bin/jrdma's arguments. */
    static String[] mainJob() throws Exception {
        List<String> readme = Files.readAllLines(Path.of("..", "README.md"));
        int block = readme.indexOf("```sh");
        String line = readme.get(block + 1);
        assertTrue(line.startsWith("bin/jrdma perf "), "the README's first command is the main job, jrdma perf: " + line);
        String command = line.replaceFirst("\\s+#.*$", "").trim();
        String[] words = command.split("\\s+");
        return Arrays.copyOfRange(words, 1, words.length);
    }

    @Test
    @Timeout(300)
    void theReadmesMainJobPrintsTheLatencyTableAndWritesThePlot() throws Exception {
        String[] args = mainJob();
        assertEquals("perf", args[0]);
        List<String> rest = List.of(args).subList(1, args.length);
        assertTrue(rest.contains("--loopback") && rest.contains("-a"), "both ends here, every size: " + rest);
        Path png = Path.of("..").resolve(rest.get(rest.indexOf("--plot") + 1));   // relative to the checkout, as bin/jrdma runs
        Files.deleteIfExists(png);
        List<String> here = new java.util.ArrayList<>(rest);
        here.set(here.indexOf("--plot") + 1, png.toString());
        PerfCommandTest.Run r = PerfCommandTest.perf(here.toArray(String[]::new));
        System.out.print(r.out());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("RDMA_Write Latency Test (jrdma perf)"), r.out());
        long rows = r.out().lines().filter(l -> l.matches("^ \\d+\\s+1000\\s+.*")).count();
        assertEquals(23, rows, "2 B to 8 MiB, 1000 iterations each:\n" + r.out());
        assertTrue(r.out().contains("Plot written to " + png.toAbsolutePath()), r.out());
        assertTrue(javax.imageio.ImageIO.read(png.toFile()).getWidth() > 0);
    }
}
