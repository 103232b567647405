package dev.jrdma.perf;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/** Writes {@code jrdma perf}'s results: perftest's table (plus p50 and max), JSON, or CSV. */
final class PerfReport {
    private static final String LINE = "-".repeat(100);

    private PerfReport() {
    }

    static void print(PrintStream out, PerfOptions o, RunFacts facts, List<PerfClient.Result> results) {
        switch (o.format()) {
            case "json" -> json(out, o, facts, results);
            case "csv" -> csv(out, o, results);
            default -> table(out, o, facts, results);
        }
    }

    private static String title(PerfTest t) {
        String op = switch (t) {
            case WRITE_LAT, WRITE_BW -> "RDMA_Write";
            case READ_LAT, READ_BW -> "RDMA_Read";
            case SEND_LAT, SEND_BW -> "Send";
            case ATOMIC_LAT, ATOMIC_BW -> "Atomic FETCH_AND_ADD";
        };
        return op + (t.latency() ? " Latency Test" : " BW Test");
    }

    private static void table(PrintStream out, PerfOptions o, RunFacts facts, List<PerfClient.Result> results) {
        PerfTest t = o.test();
        out.println(LINE);
        out.printf("                    %s (jrdma perf)%n", title(t));
        out.printf(" Provider        : %s%n Device          : %s%n Iterations      : %d, timed after the warm-up%n",
                facts.provider(), facts.device(), o.iterations());
        out.printf(" Warm-up         : %s%n", warmUps(o, results));
        int ackTimeout = facts.ackTimeout();
        if (ackTimeout >= 0) {
            out.printf(Locale.ROOT, " QP ack timeout  : %d (4.096 usec x 2^%d = %.1f ms)%n", ackTimeout, ackTimeout,
                    (4096L << ackTimeout) / 1e6);
        }
        if (o.useSrq()) {
            out.println(" Use SRQ         : ON (each end receives in a shared receive queue)");
        }
        out.println(o.events() ? " Completions     : events (-e: each end sleeps on its completion channel when idle)"
                : " Completions     : busy-polled");
        out.println(o.datagrams() ? " Connection type : UD (datagrams of at most the path MTU, not sent again when lost;"
                + " the bandwidth is the sender's, peak = average)" : " Connection type : RC");
        if (!t.latency()) {
            out.printf(" TX depth        : %d%n", facts.window());
            out.printf(" Post List       : %d%s%n", Math.min(o.postList(), facts.window()),
                    o.postList() > 1 ? " (one Batch: one doorbell, one completion)" : " (every operation completes on its own)");
        } else if (t.pingPong()) {
            out.println(" Latency         : half of each round trip, as perftest reports it");
        }
        out.println(LINE);
        if (t.latency()) {
            out.printf(" %-8s %-12s %-12s %-12s %-16s %-12s %-14s %-22s %-24s %-10s %-10s%n", "#bytes", "#iterations",
                    "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
                    "99.9% percentile[usec]", "p50[usec]", "max[usec]");
            for (PerfClient.Result r : results) {
                LatencyStats s = r.latency();
                out.printf(Locale.ROOT, " %-8d %-12d %-12.2f %-12.2f %-16.2f %-12.2f %-14.2f %-22.2f %-24.2f %-10.2f %-10.2f%n",
                        r.bytes(), r.iterations(), s.min(), s.max(), s.typical(), s.avg(), s.stdev(), s.p99(), s.p999(),
                        s.p50(), s.max());
            }
        } else {
            out.printf(" %-10s %-14s %-18s %-20s %-14s%s%n", "#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]",
                    "MsgRate[Mpps]", o.datagrams() ? " Delivered" : "");
            for (PerfClient.Result r : results) {
                out.printf(Locale.ROOT, " %-10d %-14d %-18.2f %-20.2f %-14.6f%s%n", r.bytes(), r.iterations(), r.peakMBps(),
                        r.avgMBps(), r.mpps(), r.delivered() >= 0 ? " " + r.delivered() : "");
            }
        }
        out.println(LINE);
    }

    /**
     * What the warm-up did: untimed rounds until the figure settled, the first size's (where the
     * JIT does its work) and the longest of the others', or --warmup's count.
     */
    static String warmUps(PerfOptions o, List<PerfClient.Result> results) {
        if (results.isEmpty() || results.getFirst().warmUp() == null) {
            return "none";
        }
        WarmUp first = results.getFirst().warmUp();
        String rule = o.warmUp() >= 0 ? "--warmup " + o.warmUp() + " untimed iterations per size"
                : "untimed rounds until the " + (o.test().latency() ? "typical latency" : "average bandwidth")
                + " held within " + Math.round(WarmUp.SETTLED * 100) + "% with the JIT idle";
        StringBuilder b = new StringBuilder(rule).append("; ").append(results.getFirst().bytes()).append(" B: ")
                .append(first.describe());
        WarmUp longest = null;
        int unsettled = 0;
        for (int i = 1; i < results.size(); i++) {
            WarmUp w = results.get(i).warmUp();
            if (longest == null || w.nanos() > longest.nanos()) {
                longest = w;
            }
            unsettled += w.settled() || w.counted() ? 0 : 1;
        }
        if (longest != null) {
            b.append("; the other sizes at most ").append(longest.describe());
        }
        if (unsettled > 0) {
            b.append(" (").append(unsettled).append(" sizes did not settle)");
        }
        return b.toString();
    }

    private static void json(PrintStream out, PerfOptions o, RunFacts facts, List<PerfClient.Result> results) {
        StringBuilder b = new StringBuilder();
        b.append("{\"test\":").append(jsonString(o.test().perftestName())).append(",\"provider\":")
                .append(jsonString(facts.provider())).append(",\"device\":").append(jsonString(facts.device()))
                .append(",\"iterations\":").append(o.iterations())
                .append(",\"ack_timeout\":").append(facts.ackTimeout()).append(",\"post_list\":").append(o.postList())
                .append(",\"connection\":").append(jsonString(o.datagrams() ? "UD" : "RC"))
                .append(",\"results\":[");
        for (int i = 0; i < results.size(); i++) {
            PerfClient.Result r = results.get(i);
            b.append(i == 0 ? "" : ",").append("{\"bytes\":").append(r.bytes()).append(",\"iterations\":").append(r.iterations());
            if (r.warmUp() != null) {
                b.append(String.format(Locale.ROOT, ",\"warmup_iterations\":%d,\"warmup_s\":%.3f,\"warmup_settled\":%b",
                        r.warmUp().iterations(), r.warmUp().nanos() / 1e9, r.warmUp().settled()));
            }
            if (r.latency() != null) {
                LatencyStats s = r.latency();
                b.append(String.format(Locale.ROOT, ",\"t_min_us\":%.3f,\"t_max_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,"
                        + "\"t_stdev_us\":%.3f,\"p50_us\":%.3f,\"p99_us\":%.3f,\"p99_9_us\":%.3f,\"max_us\":%.3f", s.min(), s.max(),
                        s.typical(), s.avg(), s.stdev(), s.p50(), s.p99(), s.p999(), s.max()));
            } else {
                b.append(String.format(Locale.ROOT, ",\"bw_peak_MBps\":%.3f,\"bw_avg_MBps\":%.3f,\"msg_rate_Mpps\":%.6f",
                        r.peakMBps(), r.avgMBps(), r.mpps()));
                if (r.delivered() >= 0) {
                    b.append(",\"delivered\":").append(r.delivered());
                }
            }
            b.append('}');
        }
        out.println(b.append("]}"));
    }

    /**
     * A JSON string literal of {@code s} (RFC 8259): quotes, backslashes and control characters
     * escaped. A device name is whatever its driver chose, quotes included.
     */
    static String jsonString(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private static void csv(PrintStream out, PerfOptions o, List<PerfClient.Result> results) {
        if (o.test().latency()) {
            out.println("test,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p50_us,p99_us,p99_9_us,max_us");
            for (PerfClient.Result r : results) {
                LatencyStats s = r.latency();
                out.printf(Locale.ROOT, "%s,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f%n", o.test().perftestName(),
                        r.bytes(), r.iterations(), s.min(), s.max(), s.typical(), s.avg(), s.stdev(), s.p50(), s.p99(), s.p999(), s.max());
            }
        } else {
            out.println("test,bytes,iterations,bw_peak_MBps,bw_avg_MBps,msg_rate_Mpps");
            for (PerfClient.Result r : results) {
                out.printf(Locale.ROOT, "%s,%d,%d,%.3f,%.3f,%.6f%n", o.test().perftestName(), r.bytes(), r.iterations(),
                        r.peakMBps(), r.avgMBps(), r.mpps());
            }
        }
    }
}
