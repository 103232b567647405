package dev.jrdma.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** What the benchmark reports write alike: the machine's CPU, and a time with its error. */
final class ReportText {
    private ReportText() {
    }

    /** The CPU model of /proc/cpuinfo, or "CPU unknown". */
    static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException e) {
            // not Linux
        }
        return "CPU unknown";
    }

    /** {score, error} in ns: "12 ns ± 1", or in µs from 10 µs on; {@code unit} false leaves "ns" out. */
    static String ns(double[] v, boolean unit) {
        return v[0] >= 10_000 ? String.format(Locale.ROOT, "%.1f µs ± %.1f", v[0] / 1000, v[1] / 1000)
                : String.format(Locale.ROOT, unit ? "%.0f ns ± %.0f" : "%.1f ± %.1f", v[0], v[1]);
    }
}
