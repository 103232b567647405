package dev.jrdma.device;

import java.util.function.Predicate;

/**
 * An optional capability of an RDMA device, as standard verbs report it ({@code
 * ibv_query_device_ex}), with the field or bit it is read from: {@link DeviceInfo#has} tells
 * whether a device has it, {@code jrdma devices} lists them, and a call that needs one the device
 * lacks fails with an {@link dev.jrdma.exceptions.UnsupportedCapabilityException} naming the
 * device and {@link #source()}.
 *
 * <p>Not here because standard verbs do not report them: dynamically connected transport (DCT)
 * and user-mode memory registration (UMR), which exist only in mlx5's direct verbs (mlx5dv, which
 * jrdma does not bind); thread and parent domains, which have no capability bit (only a call to
 * {@code ibv_alloc_td} tells, and only mlx5 has them in rdma-core 44); physical-address memory
 * regions, which libibverbs has no verb for.
 */
public enum Capability {
    /** 8-byte compare-and-swap and fetch-and-add. */
    ATOMICS("atomic_cap != IBV_ATOMIC_NONE", DeviceInfo::atomics),
    /** Shared receive queues: one pool of receives for many queue pairs. */
    SRQ("max_srq > 0", DeviceInfo::srq),
    /** eXtended reliable connected transport: XRC domains and shared receive queues across processes. */
    XRC("IBV_DEVICE_XRC (device_cap_flags bit 20)", d -> (d.deviceCapFlags() & (1 << 20)) != 0),
    /** Memory windows of type 1: bound to a registration with {@code ibv_bind_mw}. */
    MEMORY_WINDOW_TYPE_1("IBV_DEVICE_MEM_WINDOW (device_cap_flags bit 17)", d -> (d.deviceCapFlags() & (1 << 17)) != 0),
    /** Memory windows of type 2A: bound by a work request, remote access by QP number. */
    MEMORY_WINDOW_TYPE_2A("IBV_DEVICE_MEM_WINDOW_TYPE_2A (device_cap_flags bit 23)",
            d -> (d.deviceCapFlags() & (1 << 23)) != 0),
    /** Memory windows of type 2B: bound by a work request to one queue pair, invalidated to revoke. */
    MEMORY_WINDOW_TYPE_2B("IBV_DEVICE_MEM_WINDOW_TYPE_2B (device_cap_flags bit 24)",
            d -> (d.deviceCapFlags() & (1 << 24)) != 0),
    /** Unreliable datagram multicast groups. */
    UD_MULTICAST("max_mcast_grp > 0", d -> d.maxMcastGrp() > 0),
    /** On-demand paging: memory registered without pinning it. */
    ODP("odp_caps.general_caps IBV_ODP_SUPPORT", DeviceInfo::odp),
    /** Implicit on-demand paging: one registration of the whole address space. */
    ODP_IMPLICIT("odp_caps.general_caps IBV_ODP_SUPPORT_IMPLICIT", d -> (d.odpGeneralCaps() & 2) != 0),
    /** Device memory: on-device memory for data and counters ({@code ibv_alloc_dm}). */
    DEVICE_MEMORY("max_dm_size > 0", d -> d.maxDmSize() > 0);

    private final String source;
    private final Predicate<DeviceInfo> present;

    Capability(String source, Predicate<DeviceInfo> present) {
        this.source = source;
        this.present = present;
    }

    /** {@return the field or bit of {@code ibv_query_device_ex} that says whether a device has it} */
    public String source() {
        return source;
    }

    boolean presentOn(DeviceInfo d) {
        return present.test(d);
    }
}
