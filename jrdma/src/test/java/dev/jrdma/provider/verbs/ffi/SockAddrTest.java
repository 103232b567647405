package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.os.SockAddr;
import dev.jrdma.os.CLayouts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.junit.jupiter.api.Test;

class SockAddrTest {
    @Test
    void ipv4RoundTripsInNetworkOrder() throws Exception {
        try (Arena a = Arena.ofConfined()) {
            InetSocketAddress addr = new InetSocketAddress(InetAddress.getByName("10.77.0.1"), 7471);
            MemorySegment sa = SockAddr.of(addr, a);
            assertEquals(16, sa.byteSize());
            assertEquals(SockAddr.AF_INET, sa.get(CLayouts.U16, 0));
            assertEquals((byte) 0x1d, sa.get(CLayouts.U8, 2), "port high byte first");
            assertEquals((byte) 0x2f, sa.get(CLayouts.U8, 3));
            assertEquals((byte) 10, sa.get(CLayouts.U8, 4));
            assertEquals(addr, SockAddr.toInet(sa));
        }
    }

    @Test
    void ipv6RoundTrips() throws Exception {
        try (Arena a = Arena.ofConfined()) {
            InetSocketAddress addr = new InetSocketAddress(InetAddress.getByName("::1"), 65535);
            MemorySegment sa = SockAddr.of(addr, a);
            assertEquals(28, sa.byteSize());
            assertEquals(addr, SockAddr.toInet(sa));
        }
    }
}
