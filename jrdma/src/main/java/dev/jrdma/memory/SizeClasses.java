package dev.jrdma.memory;

/**
 * The pool's size classes: powers of two from {@value #MIN} bytes to {@value #MAX} bytes. A
 * request takes the smallest class that holds it, so at most half of a block is slack. Larger
 * requests get a registration of their own (see {@link RegisteredMemoryPool}).
 *
 * <p>Powers of two keep the class of a size one instruction away and every block aligned to
 * its size up to the chunk's alignment (4 KiB), which keeps small blocks inside one page: a
 * same-host peer maps whole pages, and a device transfers aligned blocks in fewer PCIe reads.
 */
public final class SizeClasses {
    /** The smallest block: a cache line, so no two blocks share one. */
    public static final int MIN = 64;
    /** The largest pooled block. */
    public static final int MAX = 1 << 20;
    static final int MIN_SHIFT = 6;
    /** Number of classes: 64 B, 128 B, ... 1 MiB. */
    public static final int COUNT = 20 - MIN_SHIFT + 1;
    /** Classes up to this size are cached per thread. */
    static final int THREAD_CACHED_MAX = 32 << 10;

    private SizeClasses() {
    }

    /** The class that holds {@code size} bytes (1..{@value #MAX}); -1 when it is larger. */
    public static int classOf(long size) {
        if (size > MAX) {
            return -1;
        }
        if (size <= MIN) {
            return 0;
        }
        return 64 - Long.numberOfLeadingZeros(size - 1) - MIN_SHIFT;
    }

    /** The block size of class {@code c}. */
    public static int sizeOf(int c) {
        return MIN << c;
    }
}
