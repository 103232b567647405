package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No native memory left behind per connection: libibverbs, librdmacm and rxe's provider library
 * malloc what NMT never sees, so a leak there would show only as RSS growing in a soak. Each
 * rdma_cm/verbs step, done and undone hundreds of times after a warm-up, must leave malloc's
 * in-use bytes where they were: less than 32 bytes a cycle, the median of 15 rounds (every
 * object verbs or rdma_cm allocates for an id, a queue pair or a CQ is hundreds of bytes).
 * Measured in {@link NativeHeapMain}'s interpreted JVM; its control step leaks 64 bytes a cycle
 * and must be seen doing so.
 */
@Tag("verbs")
public class NativeHeapVerbsTest {
    private static final double BOUND = 32;

    @Test
    void noStepOfAConnectionsLifeLeavesMallocdMemoryBehind(@TempDir File dir) throws Exception {
        File out = new File(dir, "child.log");
        String javaCommand = ProcessHandle.current().info().command().orElseThrow();
        String cp = java.nio.file.Path.of(LibRdmacm.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                + File.pathSeparator
                + java.nio.file.Path.of(NativeHeapMain.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                // RcEndpoint checks with JUnit's assertions: JUnit's API (in the VM, the console launcher's jar).
                + File.pathSeparator
                + java.nio.file.Path.of(org.junit.jupiter.api.Assertions.class.getProtectionDomain().getCodeSource().getLocation()
                        .toURI());
        Process child = new ProcessBuilder(javaCommand, "-Xint", "-XX:+UseSerialGC", "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                NativeHeapMain.class.getName()).redirectErrorStream(true).redirectOutput(out).start();
        if (!child.waitFor(900, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
        List<String> lines = Files.readAllLines(out.toPath());
        assertEquals(0, child.exitValue(), "the child JVM: " + lines);
        assertTrue(lines.contains("done"), "the child JVM finished: " + lines);
        Map<String, Double> perCycle = new TreeMap<>();
        for (String line : lines) {
            if (line.startsWith("step ")) {
                String[] f = line.split(" ", 4);
                perCycle.put(f[1], Double.parseDouble(f[2]));
                System.out.println("malloc'd bytes left per cycle, " + f[1] + ": " + f[2] + " (the median of rounds " + f[3] + ")");
            }
        }
        assertEquals(6, perCycle.size(), "every step measured: " + lines);
        assertTrue(perCycle.get("control") >= 64, "the measure sees a 64-byte leak per cycle: " + perCycle);
        perCycle.forEach((step, bytes) -> {
            if (!step.equals("control")) {
                assertTrue(bytes < BOUND, step + " leaves " + bytes + " bytes per cycle in malloc (bound " + BOUND + "): "
                        + perCycle);
            }
        });
    }
}
