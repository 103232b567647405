package dev.jrdma.os;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * C types of x86-64 / aarch64 Linux (LP64) and builders that lay out structs the way the C
 * compiler does, padding each member to its natural alignment and the whole to its largest.
 * Every layout built here is checked field by field against gcc in {@code StructLayoutProbeTest}.
 */
public final class CLayouts {
    public static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;
    public static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT;
    public static final ValueLayout.OfShort BE16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    public static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT;
    public static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG;
    public static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfLong SIZE_T = ValueLayout.JAVA_LONG;
    public static final ValueLayout.OfLong SSIZE_T = ValueLayout.JAVA_LONG;
    public static final AddressLayout PTR = ValueLayout.ADDRESS;
    /** glibc x86-64 / aarch64 sizes; the probe test checks them through the structs that embed them. */
    public static final MemoryLayout PTHREAD_MUTEX = opaque(40, 8);
    public static final MemoryLayout PTHREAD_COND = opaque(48, 8);

    private CLayouts() {
    }

    /** {@code char name[n]}. */
    public static SequenceLayout chars(int n) {
        return MemoryLayout.sequenceLayout(n, U8);
    }

    /** Bytes whose inside jrdma never reads, with the C type's size and alignment. */
    public static MemoryLayout opaque(long size, long alignment) {
        return MemoryLayout.structLayout(MemoryLayout.sequenceLayout(size / alignment, alignmentValue(alignment)));
    }

    private static MemoryLayout alignmentValue(long alignment) {
        return switch ((int) alignment) {
            case 1 -> U8;
            case 2 -> U16;
            case 4 -> U32;
            case 8 -> U64;
            default -> throw new IllegalArgumentException("alignment " + alignment);
        };
    }

    /** A C struct: members at their natural alignment, trailing padding to the struct's. */
    public static StructLayout struct(String name, MemoryLayout... members) {
        List<MemoryLayout> laid = new ArrayList<>();
        long offset = 0;
        long maxAlign = 1;
        for (MemoryLayout m : members) {
            long align = m.byteAlignment();
            maxAlign = Math.max(maxAlign, align);
            long aligned = (offset + align - 1) / align * align;
            if (aligned > offset) {
                laid.add(MemoryLayout.paddingLayout(aligned - offset));
            }
            laid.add(m);
            offset = aligned + m.byteSize();
        }
        long size = (offset + maxAlign - 1) / maxAlign * maxAlign;
        if (size > offset) {
            laid.add(MemoryLayout.paddingLayout(size - offset));
        }
        StructLayout layout = MemoryLayout.structLayout(laid.toArray(MemoryLayout[]::new));
        return name == null ? layout : layout.withName(name);
    }

    /** A C union, padded to a multiple of its alignment. A null name makes it anonymous. */
    public static GroupLayout union(String name, MemoryLayout... members) {
        long maxSize = 0;
        long maxAlign = 1;
        for (MemoryLayout m : members) {
            maxSize = Math.max(maxSize, m.byteSize());
            maxAlign = Math.max(maxAlign, m.byteAlignment());
        }
        long size = (maxSize + maxAlign - 1) / maxAlign * maxAlign;
        UnionLayout union = size > maxSize
                ? MemoryLayout.unionLayout(concat(members, MemoryLayout.paddingLayout(size)))
                : MemoryLayout.unionLayout(members);
        return name == null ? union : union.withName(name);
    }

    private static MemoryLayout[] concat(MemoryLayout[] members, MemoryLayout extra) {
        MemoryLayout[] all = java.util.Arrays.copyOf(members, members.length + 1);
        all[members.length] = extra;
        return all;
    }

    /**
     * Byte offset of a dotted member path such as {@code "wr.atomic.rkey"}. Anonymous unions and
     * structs are looked through, as C does.
     */
    public static long offset(GroupLayout layout, String path) {
        long offset = 0;
        GroupLayout group = layout;
        String[] parts = path.split("\\.");
        for (int i = 0; i < parts.length; i++) {
            Found found = find(group, parts[i]);
            if (found == null) {
                throw new IllegalArgumentException("no member " + path + " in " + layout.name().orElse("layout"));
            }
            offset += found.offset;
            if (i < parts.length - 1) {
                group = (GroupLayout) found.layout;
            }
        }
        return offset;
    }

    private record Found(MemoryLayout layout, long offset) {
    }

    private static Found find(GroupLayout group, String name) {
        long offset = 0;
        for (MemoryLayout m : group.memberLayouts()) {
            if (name.equals(m.name().orElse(null))) {
                return new Found(m, offset);
            }
            if (m.name().isEmpty() && m instanceof GroupLayout inner && !(m instanceof java.lang.foreign.PaddingLayout)) {
                Found nested = find(inner, name);
                if (nested != null) {
                    return new Found(nested.layout, offset + nested.offset);
                }
            }
            if (group instanceof StructLayout) {
                offset += m.byteSize();
            }
        }
        return null;
    }
}
