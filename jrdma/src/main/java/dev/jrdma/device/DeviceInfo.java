package dev.jrdma.device;

import java.util.List;

/**
 * One RDMA device: its identity, its limits and capabilities, and its ports, as
 * {@code ibv_query_device_ex} reports them. The components follow {@code struct ibv_device_attr}
 * (and {@code ibv_device_attr_ex} for the ODP and extended capability fields), in Java's names.
 *
 * @param name             the device's name ({@code ibv_get_device_name}), for example {@code mlx5_0} or {@code rxe0}
 * @param transportType    {@code enum ibv_transport_type}; {@link #transportName()} says it in words
 * @param nodeType         {@code enum ibv_node_type} (1: CA, 4: RNIC)
 * @param nodeGuid         the node GUID, in host order
 * @param sysImageGuid     the system image GUID, in host order
 * @param fwVer            the firmware version; empty when the driver has none (rxe)
 * @param vendorId         the IEEE vendor id
 * @param vendorPartId     the vendor's part id
 * @param hwVer            the hardware version
 * @param maxMrSize        the largest memory region, in bytes
 * @param pageSizeCap      the page sizes the device supports, one bit each
 * @param maxQp            the most queue pairs
 * @param maxQpWr          the most outstanding work requests on one queue
 * @param deviceCapFlags   {@code IBV_DEVICE_*} capability bits
 * @param maxSge           the most scatter/gather entries of a send or receive
 * @param maxSgeRd         the most scatter/gather entries of an RDMA read
 * @param maxCq            the most completion queues
 * @param maxCqe           the most entries of one completion queue
 * @param maxMr            the most memory regions
 * @param maxPd            the most protection domains
 * @param maxQpRdAtom      the most RDMA reads and atomics one queue pair accepts in flight as the target
 * @param maxQpInitRdAtom  the most RDMA reads and atomics one queue pair has in flight as the initiator
 * @param maxResRdAtom     the most RDMA read and atomic resources of the whole device
 * @param atomicCap        {@code enum ibv_atomic_cap}; {@link #atomics()} says whether there are any
 * @param maxMw            the most memory windows
 * @param maxAh            the most address handles
 * @param maxSrq           the most shared receive queues; 0 when the device has none
 * @param maxSrqWr         the most work requests of one shared receive queue
 * @param maxSrqSge        the most scatter/gather entries of a shared receive queue's work request
 * @param maxPkeys         the size of the partition key table
 * @param localCaAckDelay  the local CA's ACK delay (4.096 us × 2^value)
 * @param physPortCnt      the number of physical ports
 * @param odpGeneralCaps   on-demand paging capability bits ({@code IBV_ODP_SUPPORT*})
 * @param odpRcCaps        on-demand paging operations on RC queue pairs ({@code IBV_ODP_SUPPORT_*})
 * @param deviceCapFlagsEx the extended capability bits ({@code IBV_DEVICE_*} of {@code ibv_device_attr_ex})
 * @param maxMcastGrp      the most multicast groups; 0 when the device has no UD multicast
 * @param maxDmSize        the most device memory, in bytes ({@code ibv_device_attr_ex}); 0 when it has none
 * @param ports            the ports, from port 1
 */
public record DeviceInfo(String name, int transportType, int nodeType, long nodeGuid, long sysImageGuid,
                         String fwVer, int vendorId, int vendorPartId, int hwVer, long maxMrSize,
                         long pageSizeCap, int maxQp, int maxQpWr, int deviceCapFlags, int maxSge, int maxSgeRd,
                         int maxCq, int maxCqe, int maxMr, int maxPd, int maxQpRdAtom, int maxQpInitRdAtom,
                         int maxResRdAtom, int atomicCap, int maxMw, int maxAh, int maxSrq, int maxSrqWr,
                         int maxSrqSge, int maxPkeys, int localCaAckDelay, int physPortCnt, long odpGeneralCaps,
                         int odpRcCaps, long deviceCapFlagsEx, int maxMcastGrp, long maxDmSize,
                         List<PortInfo> ports) {
    /** {@code IBV_TRANSPORT_*} of {@code enum ibv_transport_type}. */
    public static final int TRANSPORT_IB = 0, TRANSPORT_IWARP = 1, TRANSPORT_USNIC = 2,
            TRANSPORT_USNIC_UDP = 3, TRANSPORT_UNSPECIFIED = 4;
    /** {@code IBV_ATOMIC_*} of {@code enum ibv_atomic_cap}. */
    public static final int ATOMIC_NONE = 0, ATOMIC_HCA = 1, ATOMIC_GLOB = 2;
    /** {@code IBV_ODP_SUPPORT} in {@link #odpGeneralCaps()}. */
    public static final long ODP_SUPPORT = 1;

    /** Copies the list of ports: a DeviceInfo does not change after it was read. */
    public DeviceInfo {
        ports = List.copyOf(ports);
    }

    /**
     * {@return whether compare-and-swap and fetch-and-add are there: {@link #atomicCap()} is not {@code
     * ATOMIC_NONE}}
     */
    public boolean atomics() {
        return atomicCap != ATOMIC_NONE;
    }

    /** {@return whether the device has shared receive queues ({@link #maxSrq()} above 0)} */
    public boolean srq() {
        return maxSrq > 0;
    }

    /**
     * {@return whether the device can page on demand (ODP), so memory can be registered without pinning
     * it}
     */
    public boolean odp() {
        return (odpGeneralCaps & ODP_SUPPORT) != 0;
    }

    /**
     * Whether the device has {@code capability}, as {@link Capability#source()} says.
     *
     * @param capability the capability
     * @return whether this device reports it
     */
    public boolean has(Capability capability) {
        return capability.presentOn(this);
    }

    /** {@return the capabilities the device reports, of those {@link Capability} lists} */
    public java.util.Set<Capability> capabilities() {
        java.util.EnumSet<Capability> s = java.util.EnumSet.noneOf(Capability.class);
        for (Capability c : Capability.values()) {
            if (has(c)) {
                s.add(c);
            }
        }
        return s;
    }

    /** {@return whether any port is active, so that connections can use the device now} */
    public boolean active() {
        return ports.stream().anyMatch(PortInfo::active);
    }

    /**
     * {@link #transportType()} as {@code ibv_devinfo} prints it ("InfiniBand", "iWARP", ...).
     *
     * @return the transport's name, or "invalid transport"
     */
    public String transportName() {
        return switch (transportType) {
            case TRANSPORT_IB -> "InfiniBand";
            case TRANSPORT_IWARP -> "iWARP";
            case TRANSPORT_USNIC -> "usNIC";
            case TRANSPORT_USNIC_UDP -> "usNIC UDP";
            case TRANSPORT_UNSPECIFIED -> "unspecified";
            default -> "invalid transport";
        };
    }

    /**
     * {@link #atomicCap()} as {@code ibv_devinfo -v} prints it ("ATOMIC_HCA", ...).
     *
     * @return the capability's name, or "invalid atomic capability"
     */
    public String atomicCapName() {
        return switch (atomicCap) {
            case ATOMIC_NONE -> "ATOMIC_NONE";
            case ATOMIC_HCA -> "ATOMIC_HCA";
            case ATOMIC_GLOB -> "ATOMIC_GLOB";
            default -> "invalid atomic capability";
        };
    }
}
