package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.examples.tour.Tour;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The README's tour of the API, as run on a fresh machine: two processes of this host on the default provider. */
class TourTest {
    @Test
    @Timeout(120)
    void theTourRunsEveryStepBetweenTwoProcessesAndChecksEachResult() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<Tour.Step> steps;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            steps = Tour.run(out);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);
        System.out.print(text);
        assertEquals(List.of("server", "open", "connect", "echo", "write", "read", "atomics", "close"),
                steps.stream().map(Tour.Step::name).toList(), text);
        boolean rdmaHere = java.nio.file.Files.isDirectory(java.nio.file.Path.of("/sys/class/infiniband"));
        if (!rdmaHere) {
            assertTrue(text.contains("provider shm") && text.contains("because verbs cannot be used here"),
                    "with no RDMA device auto chooses shm and says why:\n" + text);
        }
        assertTrue(text.contains("5000 messages of 64 B sent and echoed"), text);
        assertTrue(text.contains("equal to what was written"), text);
        assertTrue(text.contains("saw 42, left 0x10000002a"), text);
        assertTrue(text.contains("all steps checked"), text);
    }
}
