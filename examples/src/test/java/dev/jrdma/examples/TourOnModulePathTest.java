package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;
import dev.jrdma.examples.tour.Tour;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The tour as a modular application runs it: jrdma and the examples on the module path (their
 * class directories, read as exploded modules), started with {@code -m}, its server process
 * started the same way. {@link TourTest} runs it on the class path.
 */
class TourOnModulePathTest {
    @Test
    @Timeout(180)
    void theTourRunsEveryStepOnTheModulePath() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String modulePath = location(Rdma.class) + File.pathSeparator + location(Tour.class);
        Process p = new ProcessBuilder(java, "--enable-native-access=dev.jrdma", "-p", modulePath,
                "-m", "dev.jrdma.examples/" + Tour.class.getName()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the tour ended: " + out);
        assertEquals(0, p.exitValue(), out);
        for (String step : new String[] {"server", "open", "connect", "echo", "write", "read", "atomics", "close"}) {
            assertTrue(out.contains("\n  " + step + " "), "step " + step + ":\n" + out);
        }
        assertTrue(out.contains("all steps checked"), out);
    }

    private static String location(Class<?> c) throws Exception {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
