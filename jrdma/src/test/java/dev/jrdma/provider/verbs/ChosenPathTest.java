package dev.jrdma.provider.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.jrdma.provider.verbs.ffi.IbvPathData;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.junit.jupiter.api.Test;

/**
 * The path jrdma gives rdma_cm when a config chooses a service level or flow label, byte by byte
 * against the SA wire format the kernel unpacks ({@code path_rec_table} in Linux's sa_query.c:
 * flow label at word 11 bits 4-23, hop limit bits 24-31, SL at word 13 bits 12-15, life time at
 * word 14 bits 2-7, each word counted from the record's start, big-endian). Its effect on a
 * connection is {@code QosVerbsTest}'s, in the VM.
 */
class ChosenPathTest {

    @Test
    void aPathRecordCarriesEachFieldWhereTheKernelReadsIt() throws Exception {
        byte[] sgid = ChosenPath.gid(new InetSocketAddress(InetAddress.getByName("10.77.0.2"), 1));
        byte[] dgid = ChosenPath.gid(new InetSocketAddress(InetAddress.getByName("10.77.0.1"), 1));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = IbvPathData.of(sgid, dgid, 0x12345, 64, 104, 5, 3, 18, a);
            byte[] b = d.toArray(ValueLayout.JAVA_BYTE);
            assertEquals(72, b.length, "struct ibv_path_data");
            assertEquals(43, b[0], "GMP | PRIMARY | OUTBOUND | INBOUND_REVERSE: the entry ucma_set_ib_path takes");
            int path = 8;
            byte[] dgidOnWire = new byte[16];
            System.arraycopy(b, path + 8, dgidOnWire, 0, 16);
            assertArrayEquals(dgid, dgidOnWire, "dgid at word 2");
            assertEquals(0x0123_4540, be32(b, path + 44), "word 11: reserved 4 bits, flow label 0x12345, hop limit 64");
            assertEquals(104, b[path + 48], "traffic class at word 12");
            assertEquals((byte) 0x81, b[path + 49], "reversible, one path");
            assertEquals(0xFFFF, be32(b, path + 48) & 0xFFFF, "pkey");
            assertEquals(5, be32(b, path + 52) >>> 16 & 0xF, "SL at word 13 bits 12-15");
            assertEquals(0x80 | 3, b[path + 54] & 0xFF, "MTU 1024, selector 'exactly'");
            assertEquals(0x80, b[path + 55] & 0xFF, "the port's rate, selector 'exactly'");
            assertEquals(0x80 | 18, b[path + 56] & 0xFF, "packet life time 18, selector 'exactly'");
        }
        assertThrows(IllegalArgumentException.class, () -> IbvPathData.of(new byte[4], dgid, 0, 64, 0, 0, 3, 18, Arena.global()));
    }

    @Test
    void gidsAreTheAddressesAsRdmaCmMapsThem() throws Exception {
        byte[] v4 = ChosenPath.gid(new InetSocketAddress(InetAddress.getByName("10.77.0.2"), 7));
        assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xFF, (byte) 0xFF, 10, 77, 0, 2}, v4,
                "IPv4 mapped into IPv6, as rdma_ip2gid does");
        InetAddress v6 = InetAddress.getByName("fd77::2");
        assertArrayEquals(v6.getAddress(), ChosenPath.gid(new InetSocketAddress(v6, 7)));
    }

    @Test
    void theDefaultFlowLabelIsRdmaCmsHashOfThePorts() {
        assertEquals((49153 * 31 + 7471) & 0xFFFFF, ChosenPath.defaultFlowLabel(49153, 7471));
        assertEquals((65535 * 31 + 65535) & 0xFFFFF, ChosenPath.defaultFlowLabel(65535, 65535), "20 bits at most");
    }

    private static int be32(byte[] b, int at) {
        return (b[at] & 0xFF) << 24 | (b[at + 1] & 0xFF) << 16 | (b[at + 2] & 0xFF) << 8 | (b[at + 3] & 0xFF);
    }
}
