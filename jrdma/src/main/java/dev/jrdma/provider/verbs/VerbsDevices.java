package dev.jrdma.provider.verbs;

import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;
import dev.jrdma.provider.verbs.ffi.IbvDevice;
import dev.jrdma.provider.verbs.ffi.IbvDeviceAttr;
import dev.jrdma.provider.verbs.ffi.IbvDeviceAttrEx;
import dev.jrdma.provider.verbs.ffi.IbvGidEntry;
import dev.jrdma.provider.verbs.ffi.IbvPortAttr;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.provider.verbs.ffi.NativeLibraries;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads what every RDMA device on this machine is and can do: the inventory behind
 * {@code jrdma devices} and the provider's availability check. Opens each device briefly and
 * closes it again; nothing stays open.
 */
public final class VerbsDevices {
    private VerbsDevices() {
    }

    /** The names of the devices {@code ibv_get_device_list} reports, without opening them. */
    public static List<String> list() {
        NativeLibraries.ensureAvailable();
        try (Arena arena = Arena.ofConfined()) {
            int[] count = new int[1];
            MemorySegment devices = LibIbverbs.getDeviceList(arena, count);
            try {
                List<String> names = new ArrayList<>();
                for (int i = 0; i < count[0]; i++) {
                    names.add(LibIbverbs.getDeviceName(devices.getAtIndex(ValueLayout.ADDRESS, i)));
                }
                return names;
            } finally {
                LibIbverbs.freeDeviceList(devices);
            }
        }
    }

    /** Everything about every device; GID tables included. */
    public static List<DeviceInfo> describeAll() {
        NativeLibraries.ensureAvailable();
        try (Arena arena = Arena.ofConfined()) {
            int[] count = new int[1];
            MemorySegment devices = LibIbverbs.getDeviceList(arena, count);
            try {
                List<DeviceInfo> infos = new ArrayList<>();
                for (int i = 0; i < count[0]; i++) {
                    infos.add(describe(devices.getAtIndex(ValueLayout.ADDRESS, i), arena));
                }
                return infos;
            } finally {
                LibIbverbs.freeDeviceList(devices);
            }
        }
    }

    private static DeviceInfo describe(MemorySegment device, Arena arena) {
        String name = LibIbverbs.getDeviceName(device);
        MemorySegment ctx = LibIbverbs.openDevice(device);
        try {
            MemorySegment attrEx = arena.allocate(IbvDeviceAttrEx.LAYOUT);
            LibIbverbs.queryDeviceEx(ctx, attrEx);
            MemorySegment attr = IbvDeviceAttrEx.origAttr(attrEx);
            int ports = IbvDeviceAttr.physPortCnt(attr);
            List<PortInfo> portInfos = new ArrayList<>();
            MemorySegment portAttr = arena.allocate(IbvPortAttr.LAYOUT);
            MemorySegment gidEntry = arena.allocate(IbvGidEntry.LAYOUT);
            for (int port = 1; port <= ports; port++) {
                LibIbverbs.queryPort(ctx, port, portAttr);
                List<GidInfo> gids = new ArrayList<>();
                int tableLen = IbvPortAttr.gidTblLen(portAttr);
                for (int index = 0; index < tableLen; index++) {
                    if (LibIbverbs.queryGidEx(ctx, port, index, gidEntry)) {
                        gids.add(new GidInfo(index, IbvGidEntry.gid(gidEntry), IbvGidEntry.gidType(gidEntry),
                                IbvGidEntry.ndevIfindex(gidEntry)));
                    }
                }
                portInfos.add(new PortInfo(port, IbvPortAttr.state(portAttr), IbvPortAttr.maxMtu(portAttr),
                        IbvPortAttr.activeMtu(portAttr), IbvPortAttr.linkLayer(portAttr), IbvPortAttr.lid(portAttr),
                        IbvPortAttr.smLid(portAttr), IbvPortAttr.lmc(portAttr), IbvPortAttr.gidTblLen(portAttr),
                        IbvPortAttr.pkeyTblLen(portAttr), IbvPortAttr.maxMsgSz(portAttr),
                        IbvPortAttr.activeWidth(portAttr), IbvPortAttr.activeSpeed(portAttr),
                        IbvPortAttr.physState(portAttr), IbvPortAttr.portCapFlags(portAttr), gids));
            }
            return new DeviceInfo(name, IbvDevice.transportType(device), IbvDevice.nodeType(device),
                    LibIbverbs.getDeviceGuid(device), IbvDeviceAttr.sysImageGuid(attr), IbvDeviceAttr.fwVer(attr),
                    IbvDeviceAttr.intField(attr, "vendor_id"), IbvDeviceAttr.intField(attr, "vendor_part_id"),
                    IbvDeviceAttr.intField(attr, "hw_ver"), IbvDeviceAttr.maxMrSize(attr),
                    IbvDeviceAttr.pageSizeCap(attr),
                    IbvDeviceAttr.intField(attr, "max_qp"), IbvDeviceAttr.intField(attr, "max_qp_wr"),
                    IbvDeviceAttr.intField(attr, "device_cap_flags"), IbvDeviceAttr.intField(attr, "max_sge"),
                    IbvDeviceAttr.intField(attr, "max_sge_rd"), IbvDeviceAttr.intField(attr, "max_cq"),
                    IbvDeviceAttr.intField(attr, "max_cqe"), IbvDeviceAttr.intField(attr, "max_mr"),
                    IbvDeviceAttr.intField(attr, "max_pd"), IbvDeviceAttr.intField(attr, "max_qp_rd_atom"),
                    IbvDeviceAttr.intField(attr, "max_qp_init_rd_atom"),
                    IbvDeviceAttr.intField(attr, "max_res_rd_atom"), IbvDeviceAttr.intField(attr, "atomic_cap"),
                    IbvDeviceAttr.intField(attr, "max_mw"), IbvDeviceAttr.intField(attr, "max_ah"),
                    IbvDeviceAttr.intField(attr, "max_srq"), IbvDeviceAttr.intField(attr, "max_srq_wr"),
                    IbvDeviceAttr.intField(attr, "max_srq_sge"), IbvDeviceAttr.maxPkeys(attr),
                    IbvDeviceAttr.localCaAckDelay(attr), ports,
                    IbvDeviceAttrEx.odpGeneralCaps(attrEx), IbvDeviceAttrEx.odpRcCaps(attrEx),
                    IbvDeviceAttrEx.deviceCapFlagsEx(attrEx), IbvDeviceAttr.intField(attr, "max_mcast_grp"),
                    IbvDeviceAttrEx.maxDmSize(attrEx), portInfos);
        } finally {
            LibIbverbs.closeDevice(ctx);
        }
    }
}
