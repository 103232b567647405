package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.device.DeviceCapabilities;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/** The API's value types without a device: descriptors, configs, the connection handshake. */
class ApiValuesTest {
    private static final DeviceCapabilities RXE = new DeviceCapabilities(1 << 20, 32, 32767, 128, 128, -1L, true,
            false, true, false);

    @Test
    void remoteRegionDescriptorRoundTripsAndRejectsMalformedInput() {
        RemoteRegion r = new RemoteRegion(0x7f00_1234_5000L, 8192, 0x1234, Access.REMOTE_READ.bit);
        byte[] d = r.toDescriptor();
        assertEquals(32, d.length);
        RemoteRegion back = RemoteRegion.fromDescriptor(d);
        assertEquals(r, back);
        assertTrue(back.allows(Access.REMOTE_READ));
        assertFalse(back.allows(Access.REMOTE_WRITE));
        assertEquals(new RemoteRegion(0x7f00_1234_5100L, 16, 0x1234, Access.REMOTE_READ.bit), r.slice(256, 16));
        assertThrows(IndexOutOfBoundsException.class, () -> r.slice(8190, 16));

        IllegalArgumentException len = assertThrows(IllegalArgumentException.class,
                () -> RemoteRegion.fromDescriptor(java.util.Arrays.copyOf(d, 31)));
        assertTrue(len.getMessage().contains("32 bytes, not 31"), len.getMessage());
        IllegalArgumentException tiny = assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(new byte[3]));
        assertTrue(tiny.getMessage().contains("3 bytes"), tiny.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(new byte[32]))
                .getMessage().contains("magic"));

        // Version 2 carries a lease's end; a reader refuses versions it does not know.
        long end = 1_900_000_000_000L;
        RemoteRegion leased = new RemoteRegion(0x7f00_1234_5000L, 8192, 0x99, Access.REMOTE_WRITE.bit, end);
        byte[] d2 = leased.toDescriptor();
        assertEquals(40, d2.length);
        assertEquals('2', d2[3]);
        RemoteRegion back2 = RemoteRegion.fromDescriptor(d2);
        assertEquals(leased, back2);
        assertEquals(java.util.Optional.of(java.time.Instant.ofEpochMilli(end)), back2.leaseEnd());
        assertEquals(back2.leaseEnd(), back2.slice(8, 8).leaseEnd(), "a slice keeps the lease");
        assertTrue(r.leaseEnd().isEmpty());
        IllegalArgumentException cut = assertThrows(IllegalArgumentException.class,
                () -> RemoteRegion.fromDescriptor(java.util.Arrays.copyOf(d2, 32)));
        assertTrue(cut.getMessage().contains("version 2") && cut.getMessage().contains("40 bytes, not 32"), cut.getMessage());
        byte[] future = d2.clone();
        future[3] = '9';
        IllegalArgumentException v9 = assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(future));
        assertTrue(v9.getMessage().contains("version '9'"), v9.getMessage());
        byte[] flipped2 = d2.clone();
        flipped2[30] ^= 4;   // in the lease end
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(flipped2))
                .getMessage().contains("checksum"));
        byte[] badMagic = d.clone();
        badMagic[0] = 'X';
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(badMagic))
                .getMessage().contains("magic"));
        byte[] flipped = d.clone();
        flipped[10] ^= 1;
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.fromDescriptor(flipped))
                .getMessage().contains("checksum"));
        assertTrue(RemoteRegion.of(1, 2, 3).allows(Access.REMOTE_ATOMIC), "a raw region's access is the device's to check");
    }

    @Test
    void ackTimeoutDefaultsToTheConnectionManagersAndSurvivesToBuilder() {
        assertEquals(-1, ConnectionConfig.defaults().ackTimeout());
        ConnectionConfig c = ConnectionConfig.builder().ackTimeout(14).build();
        assertEquals(14, c.ackTimeout());
        assertEquals(14, c.toBuilder().build().ackTimeout());
        assertTrue(c.toString().contains("ackTimeout=14"), c.toString());
        assertTrue(ConnectionConfig.defaults().toString().contains("ackTimeout=cm"));
        assertEquals(-1, ConnectionConfig.defaults().minRnrTimer());
        ConnectionConfig rnr = ConnectionConfig.builder().minRnrTimer(0).build();
        assertEquals(0, rnr.minRnrTimer(), "0 is a timer (655.36 ms), not 'never'");
        assertEquals(12, rnr.toBuilder().minRnrTimer(12).build().minRnrTimer());
        assertEquals("minRnrTimer must be in -1..31, not 32", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().minRnrTimer(32)).getMessage());
        QueuePairInfo info = new QueuePairInfo(1, "RTS", 128, 64, 0, 16, 16, 7, 6, 14, 12, -1, -1, -1);
        assertEquals(Duration.ofNanos(67_108_864), info.ackTimeoutDuration(), "4.096 us x 2^14");
        assertNull(new QueuePairInfo(1, "RTS", 128, 64, 0, 16, 16, 7, 6, -1, -1, -1, -1, -1).ackTimeoutDuration());
        assertNull(new QueuePairInfo(1, "RTS", 128, 64, 0, 16, 16, 7, 6, 0, 0, -1, -1, -1).ackTimeoutDuration());
    }

    @Test
    void serviceLevelAndFlowLabelDefaultToTheConnectionManagersAndSurviveToBuilder() {
        assertEquals(-1, ConnectionConfig.defaults().serviceLevel());
        assertEquals(-1, ConnectionConfig.defaults().flowLabel());
        assertFalse(ConnectionConfig.defaults().toString().contains("serviceLevel"), ConnectionConfig.defaults().toString());
        ConnectionConfig c = ConnectionConfig.builder().serviceLevel(15).flowLabel(0xFFFFF).build();
        assertEquals(15, c.toBuilder().build().serviceLevel());
        assertEquals(0xFFFFF, c.toBuilder().build().flowLabel());
        assertTrue(c.toString().contains("serviceLevel=15, flowLabel=0xfffff"), c.toString());
        assertEquals(0, ConnectionConfig.builder().serviceLevel(0).build().serviceLevel(), "0 is a level, not 'unset'");
        assertEquals("serviceLevel must be in -1..15, not 16", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().serviceLevel(16)).getMessage());
        assertEquals("flowLabel must be in -1..1048575, not 1048576", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().flowLabel(0x100000)).getMessage());
        assertEquals("flowLabel must be in -1..1048575, not -2", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().flowLabel(-2)).getMessage());
    }

    @Test
    void configRefusesOutOfRangeValuesNamingTheField() {
        IllegalArgumentException rnr = assertThrows(IllegalArgumentException.class, () -> ConnectionConfig.builder().rnrRetry(7));
        assertTrue(rnr.getMessage().contains("forever"), rnr.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ConnectionConfig.builder().sendQueueDepth(0))
                .getMessage().startsWith("sendQueueDepth"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ConnectionConfig.builder().retryCount(8))
                .getMessage().startsWith("retryCount"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ConnectionConfig.builder().timeout(Duration.ZERO))
                .getMessage().startsWith("timeout"));
        IllegalArgumentException never = assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().ackTimeout(0));
        assertTrue(never.getMessage().startsWith("ackTimeout 0") && never.getMessage().contains("never"), never.getMessage());
        assertEquals("ackTimeout must be in -1..31, not 32", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().ackTimeout(32)).getMessage());
        assertEquals("ackTimeout must be in -1..31, not -2", assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().ackTimeout(-2)).getMessage());
        IllegalArgumentException big = assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().privateData(new byte[40]).authToken(new byte[10]).build());
        assertTrue(big.getMessage().contains("44 bytes"), big.getMessage());
    }

    @Test
    void configIsCheckedAgainstTheDevice() {
        assertEquals(128, ConnectionConfig.defaults().rdAtomicFor(RXE), "maxRdAtomic defaults to the device's");
        assertEquals(4, ConnectionConfig.builder().maxRdAtomic(4).build().rdAtomicFor(RXE));
        ConnectionConfig.defaults().validateFor(RXE, "rxe0");
        IllegalArgumentException rd = assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().maxRdAtomic(200).build().validateFor(RXE, "rxe0"));
        assertTrue(rd.getMessage().contains("rxe0's limit 128"), rd.getMessage());
        IllegalArgumentException cqe = assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().sendQueueDepth(30000).receiveQueueDepth(3000).build().validateFor(RXE, "rxe0"));
        assertTrue(cqe.getMessage().contains("max_cqe"), cqe.getMessage());
    }

    @Test
    void handshakeRoundTripsAndIgnoresForeignPrivateData() {
        ConnectionConfig c = ConnectionConfig.builder().receiveBufferSize(1000).receiveQueueDepth(7)
                .authToken(new byte[] {1, 2, 3}).privateData(new byte[] {9}).build();
        byte[] wire = Handshake.of(c).encode();
        byte[] padded = java.util.Arrays.copyOf(wire, 56);   // rdma_cm pads to its size
        Handshake h = Handshake.decode(padded);
        assertEquals(1000, h.receiveBufferSize());
        assertEquals(7, h.receiveDepth());
        assertArrayEquals(new byte[] {1, 2, 3}, h.token());
        assertArrayEquals(new byte[] {9}, h.data());
        assertSame(Handshake.UNKNOWN, Handshake.decode(new byte[56]), "a C peer's zeros");
        assertSame(Handshake.UNKNOWN, Handshake.decode("hello".getBytes()));
        assertEquals("bad token", Handshake.rejectionReason(java.util.Arrays.copyOf(Handshake.rejection("bad token"), 148)));
        assertNull(Handshake.rejectionReason(new byte[148]));
    }
}
