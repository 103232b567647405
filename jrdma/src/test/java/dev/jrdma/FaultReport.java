package dev.jrdma;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A fault test's section of bench/link-faults.md: printed always, and written as
 * {@code DIR/NAME.md} when the tests run with {@code -Djrdma.faults.report=DIR}
 * (scripts/bench-link-faults does, and puts the sections together in their names' order).
 */
final class FaultReport {
    private FaultReport() {
    }

    static void write(String name, String title, List<String> lines) throws IOException {
        String text = "## " + title + "\n\n" + String.join("\n", lines) + "\n";
        System.out.println(text);
        String dir = System.getProperty("jrdma.faults.report");
        if (dir != null) {
            Files.createDirectories(Path.of(dir));
            Files.writeString(Path.of(dir, name + ".md"), text);
        }
    }
}
