package dev.jrdma.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The device values are public API: their words, their copies, their checks. */
class DeviceInfoTest {
    private static byte[] ipv4Gid(int a, int b, int c, int d) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        g[12] = (byte) a;
        g[13] = (byte) b;
        g[14] = (byte) c;
        g[15] = (byte) d;
        return g;
    }

    private static PortInfo port(int state, int linkLayer, List<GidInfo> gids) {
        return new PortInfo(1, state, 5, 3, linkLayer, 0, 0, 0, 1024, 64, 0x800000L, 1, 1, 5, 0x10000, gids);
    }

    private static DeviceInfo device(int atomicCap, int maxSrq, long odp, List<PortInfo> ports) {
        return device(atomicCap, maxSrq, odp, 0, 0, 0L, ports);
    }

    private static DeviceInfo device(int atomicCap, int maxSrq, long odp, int capFlags, int maxMcastGrp, long maxDm,
                                     List<PortInfo> ports) {
        return new DeviceInfo("rxe0", DeviceInfo.TRANSPORT_IB, 1, 1L, 1L, "", 0xffffff, 0, 0, -1L, 0xfffff000L,
                1048560, 1048576, capFlags, 32, 32, 1048576, 32767, 524288, 1048576, 128, 128, 258048, atomicCap, 1024, 1,
                maxSrq, 1048576, 27, 64, 15, ports.size(), odp, 0, 0L, maxMcastGrp, maxDm, ports);
    }

    /** Each capability is read from its own field or bit, and from nothing else. */
    @Test
    void aCapabilityIsReadFromItsOwnFieldOrBit() {
        DeviceInfo bare = device(DeviceInfo.ATOMIC_NONE, 0, 0, 0, 0, 0L, List.of());
        assertEquals(java.util.Set.of(), bare.capabilities());
        assertEquals(java.util.Set.of(Capability.XRC), device(0, 0, 0, 1 << 20, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.MEMORY_WINDOW_TYPE_1),
                device(0, 0, 0, 1 << 17, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.MEMORY_WINDOW_TYPE_2A),
                device(0, 0, 0, 1 << 23, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.MEMORY_WINDOW_TYPE_2B),
                device(0, 0, 0, 1 << 24, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.UD_MULTICAST), device(0, 0, 0, 0, 1024, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.DEVICE_MEMORY), device(0, 0, 0, 0, 0, 1L << 17, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.SRQ), device(0, 8, 0, 0, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.ATOMICS), device(DeviceInfo.ATOMIC_HCA, 0, 0, 0, 0, 0L, List.of()).capabilities());
        assertEquals(java.util.Set.of(Capability.ODP, Capability.ODP_IMPLICIT), device(0, 0, 3, 0, 0, 0L, List.of()).capabilities());
        // Bits no capability is read from (MEM_MGT_EXTENSIONS, RC_RNR_NAK_GEN...) add none.
        assertEquals(java.util.Set.of(), device(0, 0, 0, ~((1 << 17) | (1 << 20) | (1 << 23) | (1 << 24)), 0, 0L, List.of())
                .capabilities());
        assertTrue(Capability.XRC.source().contains("IBV_DEVICE_XRC"), Capability.XRC.source());
    }

    @Test
    void aGidSaysItsAddressTypeAndText() {
        GidInfo v2 = new GidInfo(1, ipv4Gid(10, 77, 0, 1), GidInfo.TYPE_ROCE_V2, 3);
        assertEquals("10.77.0.1", v2.ipAddress().getHostAddress());
        assertTrue(v2.ipv4Mapped() && v2.roceV2());
        assertEquals("RoCE v2", v2.typeName());
        assertEquals("0000:0000:0000:0000:0000:ffff:0a4d:0001", v2.text());
        byte[] linkLocal = new byte[16];
        linkLocal[0] = (byte) 0xfe;
        linkLocal[1] = (byte) 0x80;
        linkLocal[15] = 7;
        GidInfo v1 = new GidInfo(0, linkLocal, GidInfo.TYPE_ROCE_V1, 3);
        assertFalse(v1.ipv4Mapped() || v1.roceV2());
        assertEquals("fe80:0:0:0:0:0:0:7", v1.ipAddress().getHostAddress());
        assertEquals("RoCE v1", v1.typeName());
        assertEquals("IB", new GidInfo(0, new byte[16], GidInfo.TYPE_IB, 0).typeName());
        assertEquals("type 9", new GidInfo(0, new byte[16], 9, 0).typeName());
        assertNull(GidInfo.ipAddress(new byte[16]), "the all-zero GID stands for no address");
    }

    @Test
    void aGidIsAValueItsBytesCannotBeChangedFromOutside() {
        byte[] bytes = ipv4Gid(10, 77, 0, 1);
        GidInfo g = new GidInfo(1, bytes, GidInfo.TYPE_ROCE_V2, 3);
        bytes[15] = 9;
        assertEquals("10.77.0.1", g.ipAddress().getHostAddress(), "the constructor copied");
        g.gid()[15] = 9;
        assertArrayEquals(ipv4Gid(10, 77, 0, 1), g.gid(), "the accessor returns a copy");
        assertEquals(g, new GidInfo(1, ipv4Gid(10, 77, 0, 1), GidInfo.TYPE_ROCE_V2, 3));
        assertEquals(g.hashCode(), new GidInfo(1, ipv4Gid(10, 77, 0, 1), GidInfo.TYPE_ROCE_V2, 3).hashCode());
        assertNotEquals(g, new GidInfo(1, ipv4Gid(10, 77, 0, 2), GidInfo.TYPE_ROCE_V2, 3));
        assertTrue(g.toString().contains("RoCE v2") && g.toString().contains("0a4d:0001"), g.toString());
    }

    @Test
    void aGidOfAnotherLengthIsRefusedNamingTheLength() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new GidInfo(0, new byte[4], 2, 0));
        assertEquals("a GID has 16 bytes, not 4", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GidInfo.ipAddress(new byte[17]));
    }

    @Test
    void aPortSaysItsStateLinkLayerAndMtuInWords() {
        PortInfo active = port(PortInfo.STATE_ACTIVE, PortInfo.LINK_LAYER_ETHERNET, List.of());
        assertTrue(active.active() && active.ethernet());
        assertEquals("PORT_ACTIVE", active.stateName());
        assertEquals("Ethernet", active.linkLayerName());
        assertEquals(1024, active.activeMtuBytes());
        PortInfo down = port(PortInfo.STATE_DOWN, PortInfo.LINK_LAYER_INFINIBAND, List.of());
        assertFalse(down.active() || down.ethernet());
        assertEquals("PORT_DOWN", down.stateName());
        assertEquals("InfiniBand", down.linkLayerName());
        assertEquals("InfiniBand", port(1, PortInfo.LINK_LAYER_UNSPECIFIED, List.of()).linkLayerName());
        assertEquals("invalid state", port(42, 1, List.of()).stateName());
        assertEquals(256, PortInfo.mtuBytes(1));
        assertEquals(4096, PortInfo.mtuBytes(5));
        assertEquals(0, PortInfo.mtuBytes(0));
        assertEquals(0, PortInfo.mtuBytes(6));
    }

    @Test
    void aDeviceSaysWhatItCanDoAndKeepsItsPorts() {
        List<PortInfo> ports = new ArrayList<>(List.of(port(PortInfo.STATE_DOWN, 2, List.of())));
        DeviceInfo none = device(DeviceInfo.ATOMIC_NONE, 0, 0, ports);
        assertFalse(none.atomics() || none.srq() || none.odp() || none.active());
        assertEquals("ATOMIC_NONE", none.atomicCapName());
        assertEquals("InfiniBand", none.transportName());
        ports.add(port(PortInfo.STATE_ACTIVE, 2, List.of()));
        assertEquals(1, none.ports().size(), "the record copied the list of ports");
        assertThrows(UnsupportedOperationException.class, () -> none.ports().add(null));
        DeviceInfo all = device(DeviceInfo.ATOMIC_HCA, 262144, DeviceInfo.ODP_SUPPORT, ports);
        assertTrue(all.atomics() && all.srq() && all.odp() && all.active());
        assertEquals("ATOMIC_HCA", all.atomicCapName());
        assertEquals("ATOMIC_GLOB", device(DeviceInfo.ATOMIC_GLOB, 0, 0, List.of()).atomicCapName());
    }
}
