package dev.jrdma.os;

import java.lang.foreign.MemorySegment;

/**
 * This process's whole address space as one segment, for copies from and to raw addresses (a
 * registration's bytes, a work request's buffer) on the data path:
 * {@code MemorySegment.copy(AddressSpace.ALL, address, to, offset, n)}. A segment made for each
 * copy ({@code MemorySegment.ofAddress(address).reinterpret(n)}) is an object per message, which
 * the JIT does not always remove; the copy's own length bounds what it touches either way.
 */
public final class AddressSpace {
    /** Every address of the process, from 0: unbounded, unchecked, never closed. */
    public static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private AddressSpace() {
    }
}
