package dev.jrdma.provider.verbs;

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
                        IbvPortAttr.physState(portAttr), IbvPortAttr.portCapFlags(portAttr), List.copyOf(gids)));
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
                    IbvDeviceAttrEx.deviceCapFlagsEx(attrEx), List.copyOf(portInfos));
        } finally {
            LibIbverbs.closeDevice(ctx);
        }
    }

    /** One device: identity, limits and capabilities, ports. Names follow {@code struct ibv_device_attr}. */
    public record DeviceInfo(String name, int transportType, int nodeType, long nodeGuid, long sysImageGuid,
                             String fwVer, int vendorId, int vendorPartId, int hwVer, long maxMrSize,
                             long pageSizeCap, int maxQp, int maxQpWr, int deviceCapFlags, int maxSge, int maxSgeRd,
                             int maxCq, int maxCqe, int maxMr, int maxPd, int maxQpRdAtom, int maxQpInitRdAtom,
                             int maxResRdAtom, int atomicCap, int maxMw, int maxAh, int maxSrq, int maxSrqWr,
                             int maxSrqSge, int maxPkeys, int localCaAckDelay, int physPortCnt, long odpGeneralCaps,
                             int odpRcCaps, long deviceCapFlagsEx, List<PortInfo> ports) {
        /** Atomics (compare-and-swap, fetch-and-add) are there when atomic_cap is not ATOMIC_NONE. */
        public boolean atomics() {
            return atomicCap != LibIbverbs.ATOMIC_NONE;
        }

        public boolean srq() {
            return maxSrq > 0;
        }

        public boolean odp() {
            return (odpGeneralCaps & IbvDeviceAttrEx.IBV_ODP_SUPPORT) != 0;
        }
    }

    /** One port. MTUs are {@code enum ibv_mtu} values (1..5 for 256..4096 bytes). */
    public record PortInfo(int port, int state, int maxMtu, int activeMtu, int linkLayer, int lid, int smLid,
                           int lmc, int gidTblLen, int pkeyTblLen, long maxMsgSz, int activeWidth, int activeSpeed,
                           int physState, int portCapFlags, List<GidInfo> gids) {
        public boolean active() {
            return state == LibIbverbs.PORT_ACTIVE;
        }
    }

    /** One valid GID table entry, with its type (IB, RoCE v1, RoCE v2) and netdev ifindex. */
    public record GidInfo(int index, byte[] gid, int type, int ndevIfindex) {
        /** The IP address this GID stands for (RoCE): IPv4 when IPv4-mapped, else IPv6; null for the all-zero GID. */
        public java.net.InetAddress ipAddress() {
            return ipAddress(gid);
        }

        /** Whether the GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d), as RoCE v2 GIDs of IPv4 addresses are. */
        public boolean ipv4Mapped() {
            for (int i = 0; i < 12; i++) {
                if (gid[i] != (i < 10 ? 0 : (byte) 0xff)) {
                    return false;
                }
            }
            return true;
        }

        /** {@link #ipAddress()} of raw GID bytes. */
        public static java.net.InetAddress ipAddress(byte[] gid) {
            boolean zero = true;
            for (byte b : gid) {
                zero &= b == 0;
            }
            if (zero) {
                return null;
            }
            GidInfo g = new GidInfo(0, gid, 0, 0);
            try {
                return java.net.InetAddress.getByAddress(g.ipv4Mapped() ? java.util.Arrays.copyOfRange(gid, 12, 16) : gid);
            } catch (java.net.UnknownHostException e) {
                throw new IllegalStateException("a GID of 16 bytes is an IPv6 address", e);
            }
        }

        /** The GID as ibv_devinfo prints it: eight colon-separated groups of four hex digits. */
        public String text() {
            StringBuilder sb = new StringBuilder(39);
            for (int i = 0; i < 16; i += 2) {
                if (i > 0) {
                    sb.append(':');
                }
                sb.append(String.format("%02x%02x", gid[i], gid[i + 1]));
            }
            return sb.toString();
        }
    }
}
