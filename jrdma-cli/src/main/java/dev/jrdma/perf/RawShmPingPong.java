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
 * to store i into the other; one round trip per iteration. {@link PairedShmPingPong} runs it
 * in blocks between jrdma's. Also the bandwidth floor: a single-core copy.
 */
final class RawShmPingPong {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long PING = 0, PONG = 128;   // separate cache lines

    private RawShmPingPong() {
    }

    /** A page of {@code file} (made if missing), shared with the other process. */
    static MemorySegment map(Path file, Arena arena) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
        }
    }

    /** The client's half of one round trip: store {@code v} in its line, wait for it in the other. */
    static void ping(MemorySegment m, long v) {
        LONG.setVolatile(m, PING, v);
        while ((long) LONG.getVolatile(m, PONG) != v) {
            Thread.onSpinWait();
        }
    }

    /** The server's half: wait for {@code v} in the client's line, store it in its own. */
    static void pong(MemorySegment m, long v) {
        while ((long) LONG.getVolatile(m, PING) != v) {
            Thread.onSpinWait();
        }
        LONG.setVolatile(m, PONG, v);
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
