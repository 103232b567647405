package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The data path's setters and getters by address ({@link AddressSpace}) write and read the same bytes
 * as the segment forms the control path uses and the struct layouts were checked against
 * ({@code StructLayoutProbeTest}): a work request, its SGE and a work completion, field by field.
 */
class DataPathSettersTest {
    @Test
    void anRdmaRequestByAddressIsTheSameBytesAsBySegment() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bySegment = a.allocate(IbvSendWr.LAYOUT), byAddress = a.allocate(IbvSendWr.LAYOUT);
            MemorySegment sge1 = a.allocate(IbvSge.LAYOUT), sge2 = a.allocate(IbvSge.LAYOUT);
            IbvSge.set(sge1, 0x1122_3344_5566L, 64, 0x0abc);
            IbvSendWr.set(bySegment, 77, sge1, 1, IbvSendWr.WR_RDMA_WRITE_WITH_IMM, IbvSendWr.SEND_SIGNALED);
            IbvSendWr.rdma(bySegment, 0x7000_0000_1000L, 0x1234);
            IbvSendWr.immData(bySegment, 0xdead_beef);
            IbvSge.setAt(sge2.address(), 0x1122_3344_5566L, 64, 0x0abc);
            IbvSendWr.presetAt(byAddress.address(), sge1.address());   // the same list pointer, to compare bytes
            IbvSendWr.setAt(byAddress.address(), 77, 1, IbvSendWr.WR_RDMA_WRITE_WITH_IMM, IbvSendWr.SEND_SIGNALED);
            IbvSendWr.rdmaAt(byAddress.address(), 0x7000_0000_1000L, 0x1234, 0xdead_beef);
            assertArrayEquals(bySegment.toArray(ValueLayout.JAVA_BYTE), byAddress.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(sge1.toArray(ValueLayout.JAVA_BYTE), sge2.toArray(ValueLayout.JAVA_BYTE));
            IbvSendWr.nextAt(byAddress.address(), bySegment.address());
            IbvSendWr.next(bySegment, bySegment);
            assertArrayEquals(bySegment.toArray(ValueLayout.JAVA_BYTE), byAddress.toArray(ValueLayout.JAVA_BYTE), "next");
        }
    }

    @Test
    void anAtomicRequestByAddressIsTheSameBytesAsBySegment() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bySegment = a.allocate(IbvSendWr.LAYOUT), byAddress = a.allocate(IbvSendWr.LAYOUT);
            MemorySegment sge = a.allocate(IbvSge.LAYOUT);
            IbvSendWr.set(bySegment, -1L, sge, 1, IbvSendWr.WR_ATOMIC_CMP_AND_SWP, 0);
            IbvSendWr.atomic(bySegment, 0x7000_0000_2008L, 0x55aa, 3, 0x8000_0000_0000_0001L);
            IbvSendWr.presetAt(byAddress.address(), sge.address());
            IbvSendWr.setAt(byAddress.address(), -1L, 1, IbvSendWr.WR_ATOMIC_CMP_AND_SWP, 0);
            IbvSendWr.atomicAt(byAddress.address(), 0x7000_0000_2008L, 0x55aa, 3, 0x8000_0000_0000_0001L);
            assertArrayEquals(bySegment.toArray(ValueLayout.JAVA_BYTE), byAddress.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aCompletionReadByAddressIsWhatTheSegmentReadsSee() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment wcs = a.allocate(IbvWc.LAYOUT, 2);
            for (int i = 0; i < wcs.byteSize(); i++) {
                wcs.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 11));
            }
            long second = wcs.address() + IbvWc.SIZE;
            assertEquals(IbvWc.wrId(wcs, 1), IbvWc.wrIdAt(second));
            assertEquals(IbvWc.status(wcs, 1), IbvWc.statusAt(second));
            assertEquals(IbvWc.opcode(wcs, 1), IbvWc.opcodeAt(second));
            assertEquals(IbvWc.byteLen(wcs, 1), IbvWc.byteLenAt(second));
            assertEquals(IbvWc.wcFlags(wcs, 1), IbvWc.wcFlagsAt(second));
            assertEquals(IbvWc.immData(wcs, 1), IbvWc.immDataAt(second));
        }
    }
}
