package dev.jrdma.os;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * This process's whole address space as one segment, for copies from and to raw addresses (a
 * registration's bytes, a work request's buffer) on the data path:
 * {@code MemorySegment.copy(AddressSpace.ALL, address, to, offset, n)}. A segment made for each
 * copy ({@code MemorySegment.ofAddress(address).reinterpret(n)}) is an object per message, which
 * the JIT does not always remove; the copy's own length bounds what it touches either way.
 *
 * <p>And plain loads and stores at raw addresses, for the hot paths: the work requests, SGEs and
 * work completions a verbs queue pair and completion queue own for their whole life, the atomics'
 * scratch words a connection's send queue owns. Why not the owners' segments: every access through
 * a segment of a shared arena checks its bounds, its alignment and that the arena is still open.
 * Counted in the Soft-RoCE VM ({@code scripts/probe-verbs-path}), staging one READ cost 214
 * instructions that way; through this constant segment the JIT folds those checks away, and a
 * store is a store. The price is that nothing checks the address: callers pass only addresses of
 * memory they allocated and free it after the last access (the queue pair's and completion
 * queue's own arenas, closed after the QP and CQ are destroyed; the send queue's scratch arena,
 * closed once nothing is in flight).
 */
public final class AddressSpace {
    /** Every address of the process, from 0: unbounded, unchecked, never closed. */
    public static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private AddressSpace() {
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
