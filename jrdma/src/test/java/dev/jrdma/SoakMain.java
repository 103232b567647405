package dev.jrdma;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * {@code scripts/soak}'s Java side: one provider's soak.
 *
 * <pre>SoakMain provider minutes intervalSeconds warmupMinutes out.md out.svg</pre>
 *
 * Writes the markdown section and the plot, prints a line per sample, and exits 0 when every
 * rule of {@link SoakReport} is met, 1 when one is not.
 */
public final class SoakMain {
    private SoakMain() {
    }

    public static void main(String[] args) throws Exception {
        String provider = args[0];
        double minutes = Double.parseDouble(args[1]);
        long interval = Long.parseLong(args[2]);
        double warmup = Double.parseDouble(args[3]);
        Path md = Path.of(args[4]), svg = Path.of(args[5]);
        Transport t = switch (provider) {
            case "tcp" -> Transport.tcp();
            case "shm" -> Transport.shm();
            case "verbs" -> Transport.verbs();
            default -> throw new IllegalArgumentException("soak: unknown provider " + provider + " (tcp, shm, verbs)");
        };
        Soak soak = new Soak(t);
        soak.run(Duration.ofMillis((long) (minutes * 60_000)), Duration.ofSeconds(interval), s -> System.out.println(
                String.format(Locale.ROOT, "soak %s: %5.1f min  RSS %7.1f MiB  native %6.1f MiB  fds %4d  threads %3d"
                        + "  ops %,12d  errors %d  p99 %7.1f us", provider, s.minutes(), s.rssKiB() / 1024.0,
                        s.nativeKiB() / 1024.0, s.fds(), s.threads(), s.operations(), s.errors(), s.p99Micros())));
        SoakReport r = new SoakReport(provider, soak.samples(), soak.errors(), warmup);
        Files.writeString(md, r.markdown(svg.getFileName().toString(), soak.operations(), minutes));
        Files.writeString(svg, r.svg());
        for (SoakReport.Verdict v : r.verdicts) {
            System.out.println("soak " + provider + ": " + String.format("%-10s", v.outcome()) + "  " + v.what() + ": "
                    + v.measured() + " (limit " + v.limit() + ")");
        }
        System.out.println("soak " + provider + ": " + (r.passed() ? "PASS" : "FAIL"));
        System.exit(r.passed() ? 0 : 1);
    }
}
