package dev.jrdma.examples.tour;

import dev.jrdma.Connection;
import dev.jrdma.FlushType;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RemoteRegion;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The main job on a fresh machine: the public API between two processes of this host, on the
 * default provider ({@code auto}: verbs when a device is up, else the software providers). It
 * starts a {@link TourServer}, then connects and goes through messaging, one-sided writes
 * with a flush, reads, and atomics, checking each result and printing what happened and how
 * long each step took.
 *
 * <pre>
 *   bin/jrdma-example tour
 * </pre>
 */
public final class Tour {
    private static final int ECHOES = 5000, WARM_UP = 1000, ECHO_SIZE = 64, BULK = 1 << 20, ROUNDS = 8, ADDS = 100;

    private Tour() {
    }

    /** One step: what it did, and how long it took. */
    public record Step(String name, String what, long nanos) {
    }

    /** Runs the tour, printing each step to {@code out}; returns the steps. Throws when a check fails. */
    public static List<Step> run(PrintStream out) throws Exception {
        List<Step> steps = new ArrayList<>();
        out.println("jrdma tour: two processes on this host, default provider (auto)");
        long t0 = System.nanoTime();
        Process server = startServer();
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String first = lines.readLine();   // its log goes to our stderr; this is its one line
            if (first == null || !first.startsWith("listening ")) {
                server.destroyForcibly();
                throw new IllegalStateException("the tour server did not start (it printed " + first + ")");
            }
            String[] f = first.split(" ", 3);
            InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(f[1]));
            step(out, steps, "server", "pid " + server.pid() + " on " + address + ", provider " + f[2], t0);

            long t = System.nanoTime();
            try (Rdma rdma = Rdma.open()) {
                step(out, steps, "open", "this process: provider " + rdma.providerName() + ", device "
                        + rdma.deviceName() + " (" + rdma.providerChoice() + ")", t);
                t = System.nanoTime();
                try (Connection c = rdma.connect(address)) {
                    step(out, steps, "connect", "established to " + c.remoteAddress() + ", QP "
                            + c.queuePair().qpNumber(), t);
                    RemoteRegion region = RemoteRegion.fromDescriptor(c.peerPrivateData());
                    echo(rdma, c, out, steps);
                    bulk(rdma, c, region, out, steps);
                    atomics(rdma, c, region.slice(region.length() - 64, 64), out, steps);
                    t = System.nanoTime();
                }
                step(out, steps, "close", "disconnected; every operation completed exactly once", t);
            }
        } finally {
            server.getOutputStream().close();   // the server exits when its stdin closes
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
        long total = System.nanoTime() - t0;
        out.printf("all steps checked, %.1f ms in all%n", total / 1e6);
        return steps;
    }

    private static void echo(Rdma rdma, Connection c, PrintStream out, List<Step> steps) throws Exception {
        long t = System.nanoTime();
        long warm = 0;
        try (LocalRegion msg = rdma.allocate(ECHO_SIZE)) {
            for (int i = 0; i < ECHOES; i++) {
                if (i == WARM_UP) {
                    warm = System.nanoTime();
                }
                msg.segment().fill((byte) i);
                var reply = c.receive();
                c.send(msg);
                try (Message m = reply.get(30, TimeUnit.SECONDS)) {
                    if (m.byteCount() != ECHO_SIZE || m.data().mismatch(msg.segment()) != -1
                            || m.imm().orElse(-1) != ECHO_SIZE) {
                        throw new IllegalStateException("echo " + i + " differs from what was sent");
                    }
                }
            }
        }
        long n = System.nanoTime() - warm;
        step(out, steps, "echo", String.format("%d messages of %d B sent and echoed (imm = length), each checked:"
                + " %.1f us per round trip after the first %d (the JIT's warm-up: %.1f us each)", ECHOES, ECHO_SIZE,
                n / 1e3 / (ECHOES - WARM_UP), WARM_UP, (warm - t) / 1e3 / WARM_UP), t);
    }

    private static void bulk(Rdma rdma, Connection c, RemoteRegion region, PrintStream out, List<Step> steps) {
        byte[] data = new byte[BULK];
        new Random(7).nextBytes(data);
        try (LocalRegion src = rdma.allocate(BULK); LocalRegion back = rdma.allocate(BULK)) {
            src.segment().copyFrom(MemorySegment.ofArray(data));
            RemoteRegion target = region.slice(0, BULK);
            long t = System.nanoTime();
            for (int r = 0; r < ROUNDS; r++) {
                c.write(src, target);
            }
            c.flushSync(target, FlushType.VISIBILITY);
            long n = System.nanoTime() - t;
            step(out, steps, "write", String.format("%d x %d KiB written one-sided, then flushed (VISIBILITY):"
                    + " %.0f MB/s", ROUNDS, BULK >> 10, (double) ROUNDS * BULK / (n / 1e9) / 1e6), t);
            t = System.nanoTime();
            c.readSync(target, back);
            if (back.segment().mismatch(src.segment()) != -1) {
                throw new IllegalStateException("the region read back differs from what was written");
            }
            n = System.nanoTime() - t;
            step(out, steps, "read", String.format("%d KiB read back one-sided, equal to what was written:"
                    + " %.0f MB/s", BULK >> 10, BULK / (n / 1e9) / 1e6), t);
        }
    }

    private static void atomics(Rdma rdma, Connection c, RemoteRegion word, PrintStream out, List<Step> steps) {
        RemoteRegion w = word.slice(0, 8);
        long t = System.nanoTime();
        long zero = c.fetchAndAddSync(w, 0);   // what was there
        c.atomicWriteSync(w, 0);
        long prior = 0;
        for (int i = 0; i < ADDS; i++) {
            prior = c.fetchAndAddSync(w, 5);
        }
        long swapped = c.compareAndSwapSync(w, ADDS * 5L, 42);
        long masked = c.maskedFetchAndAddSync(w, 1L << 32, 0x8000_0000_0000_0000L | (1L << 31));
        long end = c.fetchAndAddSync(w, 0);
        if (prior != (ADDS - 1) * 5L || swapped != ADDS * 5L || masked != 42 || end != 42 + (1L << 32)) {
            throw new IllegalStateException("atomics: prior " + prior + ", swapped " + swapped + ", masked " + masked
                    + ", end " + end);
        }
        step(out, steps, "atomics", String.format("fetchAndAdd +5 x %d -> %d; compareAndSwap(%d -> 42) saw %d;"
                + " maskedFetchAndAdd(+2^32, 32-bit fields) saw 42, left 0x%x (was 0x%x)", ADDS, ADDS * 5L, ADDS * 5L,
                swapped, end, zero), t);
    }

    private static void step(PrintStream out, List<Step> steps, String name, String what, long since) {
        long n = System.nanoTime() - since;
        steps.add(new Step(name, what, n));
        out.printf("  %-8s %9.2f ms  %s%n", name, n / 1e6, what);
    }

    /** The server in a second JVM, on the module path when this one runs there, else on the class path. */
    private static Process startServer() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        String path = location(Rdma.class) + File.pathSeparator + location(Tour.class);
        Module tour = Tour.class.getModule();
        List<String> command = tour.isNamed()
                ? List.of(java, "--enable-native-access=" + Rdma.class.getModule().getName(), "-p", path,
                        "-m", tour.getName() + "/" + TourServer.class.getName())
                : List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", path, TourServer.class.getName());
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static String location(Class<?> c) throws Exception {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    public static void main(String[] args) throws Exception {
        run(System.out);
    }
}
