package dev.jrdma;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The arithmetic of the emulated atomics, against a bit-by-bit reference. */
class MaskedAtomicsTest {

    /** Field-wise add, one bit at a time: the carry is dropped at every boundary bit. */
    private static long referenceMaskedAdd(long v, long add, long boundary) {
        long out = 0;
        int carry = 0;
        for (int i = 0; i < 64; i++) {
            int s = (int) ((v >>> i) & 1) + (int) ((add >>> i) & 1) + carry;
            out |= (long) (s & 1) << i;
            carry = ((boundary >>> i) & 1) != 0 ? 0 : s >>> 1;
        }
        return out;
    }

    @Test
    void maskedAddKeepsCarriesInsideTheirFields() {
        // Two 32-bit counters: the low one wraps without touching the high one.
        long boundary = (1L << 31) | (1L << 63);
        long v = (5L << 32) | 0xFFFF_FFFFL;
        assertEquals(5L << 32, MaskedAtomics.maskedAdd(v, 1, boundary));
        // Eight 8-bit fields, each gets +1; 0xFF wraps to 0x00 alone.
        long bytes = 0x8080808080808080L;
        assertEquals(0x0102030405060700L, MaskedAtomics.maskedAdd(0x00010203040506FFL, 0x0101010101010101L, bytes));
        // No boundary: a plain 64-bit add.
        assertEquals(Long.MIN_VALUE, MaskedAtomics.maskedAdd(Long.MAX_VALUE, 1, 0));
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < 100_000; i++) {
            long a = r.nextLong(), b = r.nextLong(), m = r.nextLong();
            assertEquals(referenceMaskedAdd(a, b, m), MaskedAtomics.maskedAdd(a, b, m), () -> a + " " + b + " " + m);
        }
    }

    @Test
    void maskedCompareAndSwapChangesOnlyTheSwapBitsAndOnlyOnAMatch() {
        long v = 0x1122_3344_5566_7788L;
        // The low byte is compared (0x88 matches); the high byte is swapped.
        assertEquals(0xAA22_3344_5566_7788L,
                MaskedAtomics.maskedCompareAndSwap(v, 0x88, 0xFF, 0xAAL << 56, 0xFFL << 56));
        // No match: unchanged.
        assertEquals(v, MaskedAtomics.maskedCompareAndSwap(v, 0x87, 0xFF, 0xAAL << 56, 0xFFL << 56));
        // Full masks: a plain compare-and-swap.
        assertEquals(42L, MaskedAtomics.maskedCompareAndSwap(v, v, -1, 42, -1));
        assertEquals(v, MaskedAtomics.maskedCompareAndSwap(v, v + 1, -1, 42, -1));
        // Empty compare mask always matches.
        assertEquals(0L, MaskedAtomics.maskedCompareAndSwap(v, 0, 0, 0, -1));
    }
}
