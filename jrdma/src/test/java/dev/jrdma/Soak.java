package dev.jrdma;

import dev.jrdma.exceptions.RemoteAccessException;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A long run of the mixed workload on one transport, sampled at a steady interval: what
 * {@code scripts/soak} drives. Each cycle opens a connection (with its listener and regions),
 * runs {@link CheckedWorkload} on it (writes, reads, sends, fetch-and-adds and compare-and-swaps,
 * every byte and completion checked), times 256 small blocking writes for the latency
 * percentiles, every fifth cycle lends a region for 500 ms and checks that the peer's device
 * refuses its key once the lease has ended, then closes all of it. A sample is taken between cycles, when nothing of a
 * cycle is open, so that file descriptors and threads compare exactly.
 */
final class Soak {
    /** One interval: what the process held at its end, and what the interval did. */
    /** {@code hugeKiB}: of the RSS, what is in transparent huge pages ({@code AnonHugePages}; -1 unknown). */
    record Sample(double minutes, long rssKiB, long hugeKiB, long nativeKiB, int fds, int threads, long operations, long cycles,
                  long errors, double p50Micros, double p99Micros, Map<String, Long> nmtKiB) {
        /** NMT's "Other": memory the JVM mallocs for Unsafe and so for FFM arenas, where jrdma's native allocations are. */
        long otherKiB() {
            return nmtKiB.getOrDefault("Other", -1L);
        }
    }

    private static final int PROBES = 256;
    /**
     * Long enough that the first write under it starts in time under the VM's emulated CPU (20 ms
     * was not: "not attempted: its lease ended"); checked every {@link #LEASE_EVERY} cycles so the
     * wait for its end does not set the pace.
     */
    private static final Duration LEASE = Duration.ofMillis(500);
    private static final int LEASE_EVERY = 5;
    /** Cycles until every kind of work has run once (the first lease is in the fifth): the least warm-up. */
    static final int CYCLES_DOING_EVERYTHING = LEASE_EVERY;

    private final Transport transport;
    private final List<Sample> samples = new ArrayList<>();
    /** Errors by kind: "checksum" (a check of the workload failed), "lease" (a key outlived its lease), or the exception's class. */
    private final Map<String, Long> errors = new TreeMap<>();
    private long operations, cycles, errorCount;
    private long[] latencies = new long[1 << 16];
    private int latencyCount;
    private int seed;

    Soak(Transport transport) {
        this.transport = transport;
    }

    List<Sample> samples() {
        return samples;
    }

    Map<String, Long> errors() {
        return errors;
    }

    long operations() {
        return operations;
    }

    /** Runs cycles for {@code length}, sampling every {@code interval}; {@code progress} hears each sample. */
    void run(Duration length, Duration interval, java.util.function.Consumer<Sample> progress) throws Exception {
        ConnectionConfig config = ConnectionConfig.defaults();
        long began = System.nanoTime(), end = began + length.toNanos();
        long nextSample = began + interval.toNanos();
        try (Rdma server = transport.server().build(); Rdma client = transport.client().build()) {
            while (System.nanoTime() < end) {
                cycle(server, client, config);
                long now = System.nanoTime();
                if (now >= nextSample) {
                    Sample s = sample((now - began) / 60e9);
                    samples.add(s);
                    progress.accept(s);
                    nextSample += interval.toNanos();
                }
            }
        }
    }

    private void cycle(Rdma server, Rdma client, ConnectionConfig config) {
        cycles++;
        try (CheckedWorkload w = new CheckedWorkload(server, client, transport.nextServerAddress(), config,
                CheckedWorkload.WINDOW)) {
            operations += w.run(++seed, Duration.ofMinutes(2)).operations();
            Connection c = w.connection();
            try (LocalRegion probe = client.allocate(64)) {
                for (int i = 0; i < PROBES; i++) {
                    long t0 = System.nanoTime();
                    c.writeSync(probe, w.remote().slice(0, 64));
                    record(System.nanoTime() - t0);
                }
                operations += PROBES;
            }
            if (cycles % LEASE_EVERY == 0) {
                lease(server, client, c);
            }
        } catch (AssertionError e) {
            error("checksum", e);
        } catch (Exception e) {
            error(e.getClass().getSimpleName(), e);
        }
    }

    /** A lease works while it lasts; after it, the key it carried is refused by the peer's device. */
    private void lease(Rdma server, Rdma client, Connection c) throws Exception {
        try (LocalRegion lent = server.allocate(4096); LocalRegion buf = client.allocate(64)) {
            RemoteRegion leased = lent.lease(LEASE);
            c.write(buf, leased.slice(0, 64)).get(30, TimeUnit.SECONDS);
            operations++;
            Thread.sleep(LEASE.toMillis() + 200);   // a soak is allowed its pace; tests wait on events
            // The raw key without the lease's end: only the peer's device can refuse it now.
            RemoteRegion raw = RemoteRegion.of(leased.address(), 64, leased.rkey());
            try {
                c.write(buf, raw).get(30, TimeUnit.SECONDS);
                error("lease", new AssertionError("a write with a key 200 ms past its lease's end went through"));
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof RemoteAccessException)) {
                    throw e;
                }
                operations++;
            }
        }
    }

    private void record(long nanos) {
        if (latencyCount == latencies.length) {
            latencies = Arrays.copyOf(latencies, latencies.length * 2);
        }
        latencies[latencyCount++] = nanos;
    }

    private void error(String kind, Throwable e) {
        errorCount++;
        if (errors.merge(kind, 1L, Long::sum) <= 3) {
            System.err.println("soak " + transport.provider() + ": " + kind + ": " + e);
        }
    }

    private Sample sample(double minutes) throws IOException {
        long[] l = Arrays.copyOf(latencies, latencyCount);
        Arrays.sort(l);
        latencyCount = 0;
        double p50 = l.length == 0 ? 0 : l[l.length / 2] / 1e3, p99 = l.length == 0 ? 0 : l[(int) (l.length * 0.99)] / 1e3;
        Map<String, Long> nmt = nmtCommittedKiB();
        long nativeBytes = nmt.containsKey("Total") ? nmt.get("Total") * 1024 : poolBytes();
        int fds;
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            fds = (int) s.count() - 1;   // less the one this listing opened
        }
        // The JDK's common pool starts and retires its workers as it likes (keep-alive 60 s): not ours to count.
        int threads = (int) Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !t.getName().startsWith("ForkJoinPool.commonPool-worker")).count();
        return new Sample(minutes, rssKiB(), anonHugePagesKiB(), nativeBytes / 1024, fds, threads, operations, cycles, errorCount,
                p50, p99, nmt);
    }

    /**
     * The JVM's committed native memory by native memory tracking's categories, in KiB, with
     * "Total" (run with {@code -XX:NativeMemoryTracking=summary}, as scripts/soak does: it covers
     * malloc, and so the FFM arenas jrdma allocates from, and the JVM's mmaps); empty without
     * tracking.
     */
    static Map<String, Long> nmtCommittedKiB() {
        Map<String, Long> out = new TreeMap<>();
        try {
            Object text = ManagementFactory.getPlatformMBeanServer().invoke(
                    new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
            java.util.regex.Matcher total = java.util.regex.Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB")
                    .matcher(String.valueOf(text));
            if (total.find()) {
                out.put("Total", Long.parseLong(total.group(2)));
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("-\\s+([A-Za-z][A-Za-z ]*?) \\(reserved=(\\d+)KB, committed=(\\d+)KB")
                    .matcher(String.valueOf(text));
            while (m.find()) {
                out.put(m.group(1).strip(), Long.parseLong(m.group(3)));
            }
        } catch (javax.management.JMException e) {
            // no diagnostic command: nothing
        }
        return out;
    }

    /** The direct and mapped buffer pools' use: the native measure without tracking. */
    private static long poolBytes() {
        long bytes = 0;
        for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            bytes += b.getMemoryUsed();
        }
        return bytes;
    }

    /**
     * The process's anonymous memory in transparent huge pages ({@code /proc/self/smaps_rollup}),
     * -1 where the kernel does not say. Where THP is "always", touching one page of a 2 MiB range
     * of committed memory (a malloc arena, the code cache) can make all of it resident at once.
     */
    static long anonHugePagesKiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/smaps_rollup"))) {
                if (line.startsWith("AnonHugePages:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            // not this kernel
        }
        return -1;
    }

    static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }
}
