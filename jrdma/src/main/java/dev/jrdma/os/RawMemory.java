package dev.jrdma.os;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Plain loads and stores at native addresses, for the hot paths: the work requests, SGEs and work
 * completions a verbs queue pair and completion queue own for their whole life, the atomics'
 * scratch words a connection's send queue owns.
 *
 * <p>Why not the owners' segments: every access through a segment of a shared arena checks its
 * bounds, its alignment and that the arena is still open, and every segment passed to a downcall
 * is acquired and released around it (two atomic operations). Counted in the Soft-RoCE VM
 * ({@code dev.jrdma.VerbsPathProbe} under {@code softroce-vm --icount}), staging one READ cost
 * 214 instructions that way. Through one constant segment over all of memory the JIT folds those
 * checks away, and a store is a store. The price is that nothing checks the address: callers
 * pass only addresses of memory they allocated and free it after the last access (the queue pair's
 * and completion queue's own arenas, closed after the QP and CQ are destroyed; the send queue's
 * scratch arena, closed once nothing is in flight).
 */
public final class RawMemory {
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private RawMemory() {
    }

    public static void putLong(long address, long value) {
        ALL.set(ValueLayout.JAVA_LONG_UNALIGNED, address, value);
    }

    public static void putInt(long address, int value) {
        ALL.set(ValueLayout.JAVA_INT_UNALIGNED, address, value);
    }

    public static long getLong(long address) {
        return ALL.get(ValueLayout.JAVA_LONG_UNALIGNED, address);
    }

    public static int getInt(long address) {
        return ALL.get(ValueLayout.JAVA_INT_UNALIGNED, address);
    }
}
