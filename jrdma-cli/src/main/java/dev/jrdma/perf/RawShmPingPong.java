package dev.jrdma.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The floor for shm latency: two JVMs spinning on flags in one shared mapping (a file in
 * /dev/shm), nothing else. The client stores i into its cache line and waits for the server
 * to store i into the other; one round trip per iteration.
 */
final class RawShmPingPong {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long PING = 0, PONG = 128;   // separate cache lines

    private RawShmPingPong() {
    }

    private static MemorySegment map(Path file, Arena arena) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
        }
    }

    /** Prints "ready 0" and answers every ping until it sees -1. */
    static void serve(Path file) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = map(file, arena);
            System.out.println("ready 0");
            System.out.flush();
            long last = 0;
            while (true) {
                long v;
                while ((v = (long) LONG.getVolatile(m, PING)) == last) {
                    Thread.onSpinWait();
                }
                if (v < 0) {
                    return;
                }
                LONG.setVolatile(m, PONG, v);
                last = v;
            }
        }
    }

    static long[] pingPong(Path file, int iterations) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = map(file, arena);
            long[] rtt = new long[iterations];
            for (int i = 0; i < iterations; i++) {
                long v = i + 1;
                long t = System.nanoTime();
                LONG.setVolatile(m, PING, v);
                while ((long) LONG.getVolatile(m, PONG) != v) {
                    Thread.onSpinWait();
                }
                rtt[i] = System.nanoTime() - t;
            }
            LONG.setVolatile(m, PING, -1L);
            return rtt;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** Single-core MemorySegment.copy bandwidth of {@code size}-byte copies, bytes per second. */
    static double copyBandwidth(int size, int count) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(size, 4096), b = arena.allocate(size, 4096);
            for (int warm = 0; warm < 50; warm++) {
                MemorySegment.copy(a, 0, b, 0, size);
            }
            long t = System.nanoTime();
            for (int i = 0; i < count; i++) {
                MemorySegment.copy(a, 0, b, 0, size);
            }
            return (double) size * count / ((System.nanoTime() - t) / 1e9);
        }
    }
}
