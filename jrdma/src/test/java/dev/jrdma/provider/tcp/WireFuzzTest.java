package dev.jrdma.provider.tcp;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Coverage-guided fuzzing (Jazzer) of what a peer controls: the handshake decoder and the shared
 * ring's consumer and producer with positions a peer writes. Without JAZZER_FUZZ=1 each runs its
 * seed inputs (a regression test); with it, it fuzzes (scripts/fuzz). Passes when nothing but the
 * documented refusals (IllegalArgumentException for a bad handshake, -1 for impossible ring
 * positions) comes out, and the guard bytes around the ring never change.
 */
class WireFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void handshakeDecoding(byte[] input) {
        try {
            if (input.length >= TcpHandshake.HEADER_SIZE) {
                TcpHandshake.checkHeader(java.util.Arrays.copyOf(input, TcpHandshake.HEADER_SIZE));
            }
            TcpHandshake.decodeHello(input);
        } catch (IllegalArgumentException refused) {
            // the only way a bad handshake may end
        }
    }

    @FuzzTest(maxDuration = "10s")
    void ringPositionsFromAPeer(FuzzedDataProvider data) {
        try (Arena arena = Arena.ofConfined()) {
            int capacity = 64 + data.consumeInt(0, 4096);
            MemorySegment all = arena.allocate(SharedByteRing.HEADER + capacity + 128, 64);
            all.fill((byte) 0x5A);
            MemorySegment ring = all.asSlice(64, SharedByteRing.HEADER + capacity);
            ring.fill((byte) 0);
            ring.set(ValueLayout.JAVA_LONG, 0, data.consumeLong());    // produced, as a peer wrote it
            ring.set(ValueLayout.JAVA_LONG, 64, data.consumeLong());   // consumed, as a peer wrote it
            SharedByteRing r = new SharedByteRing(ring);
            MemorySegment buf = arena.allocate(8192);
            long n = r.read(buf.address(), data.consumeInt(0, 8192));
            if (n < -1 || n > capacity) {
                throw new AssertionError("read returned " + n);
            }
            long w = r.write(buf.address(), data.consumeInt(0, 8192), data.consumeLong());
            if (w < -1 || w > capacity) {
                throw new AssertionError("write returned " + w);
            }
            for (long i = 0; i < 64; i++) {
                if (all.get(ValueLayout.JAVA_BYTE, i) != 0x5A
                        || all.get(ValueLayout.JAVA_BYTE, 64 + SharedByteRing.HEADER + capacity + i) != 0x5A) {
                    throw new AssertionError("a guard byte around the ring changed");
                }
            }
        }
    }
}
