package dev.jrdma;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * rxe's transport counters ({@code /sys/class/infiniband/DEV/ports/1/hw_counters}), summed over
 * devices: what a reader of a fault test looks at to see that retransmissions really happened.
 * The ones that matter here: {@code completer_retry_err} (a request sent again after the ack
 * timer fired), {@code rcvd_seq_err} (a NAK for a sequence gap, answered by sending again),
 * {@code out_of_seq_request} (a request ahead of the expected PSN, i.e. one before it was lost or
 * is late), {@code duplicate_request} (a request seen twice, dropped or answered again), and
 * {@code retry_exceeded_err} (the retry budget ran out: the QP went to the error state).
 */
record RxeCounters(Map<String, Long> values) {

    static RxeCounters read(List<String> devices) {
        Map<String, Long> sum = new TreeMap<>();
        for (String dev : devices) {
            Path dir = Path.of("/sys/class/infiniband", dev, "ports", "1", "hw_counters");
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    try {
                        sum.merge(f.getFileName().toString(), Long.parseLong(Files.readString(f).strip()), Long::sum);
                    } catch (IOException | NumberFormatException e) {
                        // a counter that cannot be read is left out; get() then says 0
                    }
                }
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + dir + ": " + e, e);
            }
        }
        return new RxeCounters(sum);
    }

    long get(String name) {
        return values.getOrDefault(name, 0L);
    }

    /** This minus {@code before}, counter by counter. */
    RxeCounters since(RxeCounters before) {
        Map<String, Long> d = new TreeMap<>();
        values.forEach((k, v) -> d.put(k, v - before.get(k)));
        return new RxeCounters(d);
    }
}
