package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_device}: an entry of {@code ibv_get_device_list}. */
public final class IbvDevice {
    public static final StructLayout LAYOUT = struct("ibv_device",
            struct(null, PTR.withName("_dummy1"), PTR.withName("_dummy2")).withName("_ops"),
            INT.withName("node_type"),
            INT.withName("transport_type"),
            chars(64).withName("name"),
            chars(64).withName("dev_name"),
            chars(256).withName("dev_path"),
            chars(256).withName("ibdev_path"));

    /** {@code enum ibv_node_type}. */
    public static final int NODE_CA = 1, NODE_SWITCH = 2, NODE_ROUTER = 3, NODE_RNIC = 4, NODE_USNIC = 5,
            NODE_USNIC_UDP = 6, NODE_UNSPECIFIED = 7;
    /** {@code enum ibv_transport_type}. */
    public static final int TRANSPORT_IB = 0, TRANSPORT_IWARP = 1, TRANSPORT_USNIC = 2, TRANSPORT_USNIC_UDP = 3,
            TRANSPORT_UNSPECIFIED = 4;

    private IbvDevice() {
    }

    private static MemorySegment of(MemorySegment device) {
        return device.reinterpret(LAYOUT.byteSize());
    }

    public static int nodeType(MemorySegment d) { return of(d).get(INT, offset(LAYOUT, "node_type")); }
    public static int transportType(MemorySegment d) { return of(d).get(INT, offset(LAYOUT, "transport_type")); }
    public static String name(MemorySegment d) { return of(d).getString(offset(LAYOUT, "name")); }
    public static String devName(MemorySegment d) { return of(d).getString(offset(LAYOUT, "dev_name")); }
    public static String ibdevPath(MemorySegment d) { return of(d).getString(offset(LAYOUT, "ibdev_path")); }
}
