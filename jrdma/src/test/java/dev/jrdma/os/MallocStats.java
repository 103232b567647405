package dev.jrdma.os;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

/**
 * glibc's {@code mallinfo2()}: the bytes malloc has handed out and not had back, in every arena
 * and in its mmapped chunks. NMT does not see malloc calls made by native libraries (libibverbs,
 * librdmacm, their providers), so this is how a test finds a leak there.
 */
public final class MallocStats {
    private static final StructLayout MALLINFO2 = MemoryLayout.structLayout(
            JAVA_LONG.withName("arena"), JAVA_LONG.withName("ordblks"), JAVA_LONG.withName("smblks"),
            JAVA_LONG.withName("hblks"), JAVA_LONG.withName("hblkhd"), JAVA_LONG.withName("usmblks"),
            JAVA_LONG.withName("fsmblks"), JAVA_LONG.withName("uordblks"), JAVA_LONG.withName("fordblks"),
            JAVA_LONG.withName("keepcost"));
    private static final MethodHandle MALLINFO2_CALL = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("mallinfo2")
                    .orElseThrow(() -> new UnsupportedOperationException("this C library has no mallinfo2 (glibc >= 2.33 has)")),
            FunctionDescriptor.of(MALLINFO2));

    private MallocStats() {
    }

    /** Bytes in use: allocated from the arenas ({@code uordblks}) plus those in mmapped chunks ({@code hblkhd}). */
    public static long inUse() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = (MemorySegment) MALLINFO2_CALL.invokeExact((SegmentAllocator) a);
            return m.get(JAVA_LONG, MALLINFO2.byteOffset(MemoryLayout.PathElement.groupElement("uordblks")))
                    + m.get(JAVA_LONG, MALLINFO2.byteOffset(MemoryLayout.PathElement.groupElement("hblkhd")));
        } catch (Throwable t) {
            throw new IllegalStateException("mallinfo2", t);
        }
    }
}
