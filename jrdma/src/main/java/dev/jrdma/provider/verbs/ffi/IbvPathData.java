package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * {@code struct ibv_path_data} ({@code <infiniband/sa.h>}): the path record, in the subnet
 * administrator's wire format (big-endian, packed bit fields), that {@code rdma_set_option(id,
 * RDMA_OPTION_IB, RDMA_OPTION_IB_PATH)} gives rdma_cm instead of {@code rdma_resolve_route}.
 * The kernel takes the entry whose flags are {@link #FLAGS_PRIMARY_BIDIRECTIONAL} and, on a RoCE
 * port, fills in the record type and the destination MAC itself.
 */
public final class IbvPathData {
    private static final ValueLayout.OfShort BE16 = U16.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = U32.withOrder(ByteOrder.BIG_ENDIAN);

    /** {@code struct ibv_path_record}: 64 bytes. */
    static final StructLayout RECORD = struct("ibv_path_record",
            U64.withOrder(ByteOrder.BIG_ENDIAN).withName("service_id"),
            MemoryLayout.sequenceLayout(16, U8).withName("dgid"),
            MemoryLayout.sequenceLayout(16, U8).withName("sgid"),
            BE16.withName("dlid"),
            BE16.withName("slid"),
            BE32.withName("flowlabel_hoplimit"),   // reserved 31:28, flow label 27:8, hop limit 7:0
            U8.withName("tclass"),
            U8.withName("reversible_numpath"),     // reversible 7, num path 6:0
            BE16.withName("pkey"),
            BE16.withName("qosclass_sl"),          // QoS class 15:4, SL 3:0
            U8.withName("mtu"),                    // selector 7:6, mtu 5:0
            U8.withName("rate"),                   // selector 7:6, rate 5:0
            U8.withName("packetlifetime"),         // selector 7:6, life time 5:0
            U8.withName("preference"),
            MemoryLayout.sequenceLayout(6, U8).withName("reserved"));

    public static final StructLayout LAYOUT = struct("ibv_path_data",
            U32.withName("flags"),
            U32.withName("reserved"),
            RECORD.withName("path"));

    /** {@code IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL}: the one entry rdma_cm uses. */
    public static final int FLAGS_PRIMARY_BIDIRECTIONAL = 1 | 2 | (8 | 32);

    /** {@code IB_SA_EQ}: the selector of a value that is exactly what the record says. */
    private static final int SELECTOR_EQ = 2;

    /** {@code IB_RATE_PORT_CURRENT}: the port's own rate. */
    private static final int RATE_PORT_CURRENT = 0;

    private IbvPathData() {
    }

    /**
     * A path record of one bidirectional primary path, as rdma_cm makes one for RoCE
     * ({@code cma_resolve_iboe_route}) but with the caller's service level and flow label.
     *
     * @param sgid           the source GID (16 bytes)
     * @param dgid           the destination GID (16 bytes)
     * @param flowLabel      the GRH flow label, 20 bits
     * @param hopLimit       the GRH hop limit (the IP TTL on RoCE v2)
     * @param trafficClass   the GRH traffic class (the IP TOS on RoCE v2)
     * @param serviceLevel   the service level, 4 bits
     * @param mtu            {@code enum ibv_mtu}
     * @param packetLifeTime the packet life time exponent (the ack timeout is derived from it)
     * @param allocator      where the record is made
     * @return the {@code struct ibv_path_data}
     */
    public static MemorySegment of(byte[] sgid, byte[] dgid, int flowLabel, int hopLimit, int trafficClass,
                                   int serviceLevel, int mtu, int packetLifeTime, SegmentAllocator allocator) {
        if (sgid.length != 16 || dgid.length != 16) {
            throw new IllegalArgumentException("a GID is 16 bytes, not " + sgid.length + " and " + dgid.length);
        }
        MemorySegment d = allocator.allocate(LAYOUT);
        d.fill((byte) 0);
        d.set(U32, offset(LAYOUT, "flags"), FLAGS_PRIMARY_BIDIRECTIONAL);
        MemorySegment.copy(MemorySegment.ofArray(dgid), 0, d, offset(LAYOUT, "path.dgid"), 16);
        MemorySegment.copy(MemorySegment.ofArray(sgid), 0, d, offset(LAYOUT, "path.sgid"), 16);
        d.set(BE32, offset(LAYOUT, "path.flowlabel_hoplimit"), ((flowLabel & 0xFFFFF) << 8) | (hopLimit & 0xFF));
        d.set(U8, offset(LAYOUT, "path.tclass"), (byte) trafficClass);
        d.set(U8, offset(LAYOUT, "path.reversible_numpath"), (byte) (0x80 | 1));
        d.set(BE16, offset(LAYOUT, "path.pkey"), (short) 0xFFFF);
        d.set(BE16, offset(LAYOUT, "path.qosclass_sl"), (short) (serviceLevel & 0xF));
        d.set(U8, offset(LAYOUT, "path.mtu"), (byte) (SELECTOR_EQ << 6 | (mtu & 0x3F)));
        d.set(U8, offset(LAYOUT, "path.rate"), (byte) (SELECTOR_EQ << 6 | RATE_PORT_CURRENT));
        d.set(U8, offset(LAYOUT, "path.packetlifetime"), (byte) (SELECTOR_EQ << 6 | (packetLifeTime & 0x3F)));
        return d;
    }
}
