package dev.jrdma.provider.verbs;

import dev.jrdma.device.Capability;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;
import dev.jrdma.exceptions.NativeRdmaException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.provider.verbs.ffi.IbvAsyncEvent;
import dev.jrdma.provider.verbs.ffi.IbvContext;
import dev.jrdma.provider.verbs.ffi.IbvDeviceAttrEx;
import dev.jrdma.provider.verbs.ffi.IbvMr;
import dev.jrdma.provider.verbs.ffi.IbvQp;
import dev.jrdma.os.AddressSpace;
import dev.jrdma.os.LibC;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Srq;
import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.spi.DeviceEventHandler;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.MemoryWindow;
import dev.jrdma.spi.QueuePair;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A device opened for connections: librdmacm's own verbs context for it (every rdma_cm id on the
 * device carries that same context, so one protection domain serves all its connections) and a
 * PD on it.
 *
 * <p>That context, and so its async-event fd, is one per process and device: every VerbsDevice
 * open on it gets every event (whichever reads one hands it to all), as two Rdma instances on one
 * device must both hear of a port going down.
 */
final class VerbsDevice implements Device {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /** The open devices by their context's address, for the fan-out of async events. */
    private static final Map<Long, List<VerbsDevice>> OPEN = new ConcurrentHashMap<>();
    private final DeviceInfo info;
    private final DeviceCapabilities capabilities;
    /** Type 2B memory windows (device_cap_flags bit 24): toRemoteFor binds one on the connection's QP. */
    private final boolean windows;
    final MemorySegment context;
    final MemorySegment pd;
    private final InetAddress sourceAddress;
    private final InetAddress sourceAddress6;
    private boolean closed;
    private volatile DeviceEventHandler eventHandler;
    private final Arena eventArena = Arena.ofShared();
    private final MemorySegment event = eventArena.allocate(IbvAsyncEvent.LAYOUT);

    private VerbsDevice(DeviceInfo info, MemorySegment context) {
        this.info = info;
        this.sourceAddress = ipv4Of(info);
        this.sourceAddress6 = ipv6Of(info);
        this.context = context;
        this.windows = info.has(Capability.MEMORY_WINDOW_TYPE_2B) && info.maxMw() > 0
                && !"false".equals(System.getProperty("jrdma.verbs.memoryWindows"));
        this.capabilities = new DeviceCapabilities(info.maxQpWr(), info.maxSge(), info.maxCqe(), info.maxQpRdAtom(),
                info.maxQpInitRdAtom(), info.maxMrSize(), info.atomics(), false, info.srq(), info.odp());
        this.pd = LibIbverbs.allocPd(context);
        LibC.setNonBlocking(IbvContext.asyncFd(context));
        OPEN.computeIfAbsent(context.address(), k -> new CopyOnWriteArrayList<>()).add(this);
    }

    /** {@code name} null: the first device with an active port. */
    static VerbsDevice open(String name) {
        List<DeviceInfo> all = VerbsDevices.describeAll();
        DeviceInfo chosen = null;
        for (DeviceInfo d : all) {
            boolean active = d.active();
            if (name == null ? active : d.name().equals(name)) {
                if (!active) {
                    throw new RdmaException("RDMA device " + name + " has no active port (ibv_devinfo shows its ports)");
                }
                chosen = d;
                break;
            }
        }
        if (chosen == null) {
            throw new RdmaException(name == null
                    ? "no RDMA device has an active port (devices: " + names(all) + ")"
                    : "no RDMA device named '" + name + "' (devices: " + names(all) + ")");
        }
        return new VerbsDevice(chosen, rdmaCmContext(chosen.name()));
    }

    /**
     * The IPv4 address of the first active port's IPv4-mapped RoCE v2 GID, or null (InfiniBand,
     * or no IPv4 address): outgoing connections resolve from it, so that they leave through
     * this device even when the kernel's route would pick another.
     */
    private static InetAddress ipv4Of(DeviceInfo info) {
        for (PortInfo port : info.ports()) {
            if (!port.active()) {
                continue;
            }
            for (GidInfo g : port.gids()) {
                if (g.roceV2() && g.ipv4Mapped()) {
                    return g.ipAddress();
                }
            }
        }
        return null;
    }

    /**
     * The address outgoing connections to {@code remote} resolve from: this device's RoCE v2 GID
     * address of {@code remote}'s family (IPv4, or an IPv6 one that is not link-local), or null
     * (InfiniBand, or no such address: rdma_cm's route decides). An IPv6 loopback, link-local or
     * unspecified destination keeps the IPv4 source, which rdma_cm refuses at once for the other
     * family: resolving ::1 from the device's IPv6 address instead left that connect hanging in
     * rdma_cm and every later connect of the process timing out (seen on rxe, Linux 6.1, with
     * Netty's connect-refused test, which connects to ::1).
     */
    InetAddress sourceAddressFor(InetAddress remote) {
        if (remote instanceof java.net.Inet6Address a && !a.isLoopbackAddress() && !a.isLinkLocalAddress()
                && !a.isAnyLocalAddress()) {
            return sourceAddress6;
        }
        return sourceAddress;
    }

    /** The IPv6 address of the first active port's RoCE v2 GID that is neither IPv4-mapped nor link-local, or null. */
    private static InetAddress ipv6Of(DeviceInfo info) {
        for (PortInfo port : info.ports()) {
            if (!port.active()) {
                continue;
            }
            for (GidInfo g : port.gids()) {
                InetAddress a = g.ipAddress();
                if (g.roceV2() && !g.ipv4Mapped() && a instanceof java.net.Inet6Address && !a.isLinkLocalAddress()) {
                    return a;
                }
            }
        }
        return null;
    }

    private static String names(List<DeviceInfo> all) {
        return all.isEmpty() ? "none" : String.join(", ", all.stream().map(DeviceInfo::name).toList());
    }

    private static MemorySegment rdmaCmContext(String name) {
        try (Arena arena = Arena.ofConfined()) {
            int[] count = new int[1];
            MemorySegment list = LibRdmacm.getDevices(arena, count);
            try {
                for (int i = 0; i < count[0]; i++) {
                    MemorySegment ctx = list.getAtIndex(ValueLayout.ADDRESS, i);
                    if (LibIbverbs.getDeviceName(IbvContext.device(ctx)).equals(name)) {
                        return IbvContext.of(ctx);
                    }
                }
            } finally {
                LibRdmacm.freeDevices(list);
            }
        }
        throw new RdmaException("librdmacm does not list RDMA device " + name
                + " (rdma_get_devices): is the rdma_ucm module loaded?");
    }

    @Override
    public String name() {
        return info.name();
    }

    @Override
    public DeviceCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public MemoryRegistration register(MemorySegment memory, int access) {
        try {
            // With windows, every registration may have one bound over it (toRemoteFor): MW_BIND.
            int native_ = windows ? access | IbvMr.ACCESS_MW_BIND : access;
            return new VerbsMemoryRegistration(LibIbverbs.regMr(pd, memory, native_), memory, access, windows);
        } catch (NativeRdmaException e) {
            throw MemlockBudget.explain(e, memory.byteSize());
        }
    }

    @Override
    public void checkMemoryBudget(long bytes) {
        MemlockBudget.check(name(), bytes);
    }

    @Override
    public boolean bindsWindows() {
        return windows;
    }

    @Override
    public MemoryWindow allocateWindow() {
        if (!windows) {
            return Device.super.allocateWindow();
        }
        return new VerbsMemoryWindow(LibIbverbs.allocMw(IbvContext.allocMwFn(context), pd, LibIbverbs.MW_TYPE_2),
                IbvContext.deallocMwFn(context));
    }

    @Override
    public MemoryRegistration registerFor(QueuePair qp, MemorySegment memory, int access) {
        // A key that only one QP may use is a type 2B memory window bound on that QP; binding
        // windows (IBV_WR_BIND_MW, and invalidating them to revoke) is issue 22's.
        throw new UnsupportedCapabilityException("a registration for one connection", name(),
                "it takes a type 2B memory window bound on the connection's queue pair, which jrdma's verbs provider "
                        + "does not bind yet (the device reports max_mw " + info.maxMw() + "); toRemote() exposes "
                        + "exactly the range to every peer holding the descriptor");
    }

    @Override
    public MemoryRegistration registerOnDemand(MemorySegment memory, int access) {
        if (!capabilities.odp()) {
            throw new UnsupportedCapabilityException("on-demand paging", name(),
                    "the device reports no IBV_ODP_SUPPORT in odp_caps.general_caps (register pins the memory instead)");
        }
        return new VerbsMemoryRegistration(LibIbverbs.regMr(pd, memory, access | IbvMr.ACCESS_ON_DEMAND), memory, access);
    }

    @Override
    public MemoryRegistration registerImplicitOnDemand(int access) {
        if ((info.odpGeneralCaps() & IbvDeviceAttrEx.IBV_ODP_SUPPORT_IMPLICIT) == 0) {
            throw new UnsupportedCapabilityException("implicit on-demand paging", name(),
                    "the device reports no IBV_ODP_SUPPORT_IMPLICIT in odp_caps.general_caps");
        }
        return new VerbsMemoryRegistration(LibIbverbs.regMrImplicitOnDemand(pd, access), AddressSpace.ALL, access);
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        return new VerbsCompletionChannel(LibIbverbs.createCompChannel(context));
    }

    /** What the device reported when it was opened (ports, GIDs). */
    DeviceInfo info() {
        return info;
    }

    @Override
    public CompletionQueue createCompletionQueue(int depth, CompletionChannel channel) {
        MemorySegment ch = channel == null ? MemorySegment.NULL : ((VerbsCompletionChannel) channel).channel;
        return new VerbsCompletionQueue(LibIbverbs.createCq(context, depth, ch, 0), context);
    }

    /**
     * The device's {@code max_cqe}: the connections of one IO thread share completion queues
     * (one {@code ibv_poll_cq} a pass for all of them); {@code -Djrdma.verbs.sharedCompletionQueues=false}
     * gives each its own again (0), for a comparison in one boot.
     */
    @Override
    public int sharedCompletionQueueDepth() {
        return SHARED_CQS ? Math.max(0, capabilities.maxCqe()) : 0;
    }

    private static final boolean SHARED_CQS = !"false".equals(System.getProperty("jrdma.verbs.sharedCompletionQueues"));

    @Override
    public ConnectionManager createConnectionManager() {
        return new VerbsConnectionManager(this, ConnectionLimits.DEFAULTS);
    }

    @Override
    public ConnectionManager createConnectionManager(ConnectionLimits limits) {
        return new VerbsConnectionManager(this, limits);
    }

    @Override
    public Srq createSrq(int capacity, Runnable onLimit) {
        if (!capabilities.srq()) {
            throw new UnsupportedCapabilityException("shared receive queues (max_srq 0)", name(), null);
        }
        return new VerbsSharedReceiveQueue(this, capacity, onLimit);
    }

    @Override
    public int eventFd() {
        return IbvContext.asyncFd(context);
    }

    @Override
    public void onEvents(DeviceEventHandler handler) {
        eventHandler = handler;
    }

    @Override
    public int pollEvents() {
        int n = 0;
        synchronized (VerbsDevice.class) {   // one reader of the shared fd at a time; the event buffer is ours
            while (LibIbverbs.tryGetAsyncEvent(context, event)) {
                n++;
                int type = IbvAsyncEvent.eventType(event);
                int qpNum = IbvAsyncEvent.aboutQp(type)
                        ? IbvQp.qpNum(IbvAsyncEvent.element(event).reinterpret(IbvQp.LAYOUT.byteSize())) : -1;
                int port = IbvAsyncEvent.aboutPort(type) ? IbvAsyncEvent.portNum(event) : -1;
                long srq = type == IbvAsyncEvent.SRQ_LIMIT_REACHED ? IbvAsyncEvent.element(event).address() : 0;
                LibIbverbs.ackAsyncEvent(event);
                if (srq != 0) {
                    VerbsSharedReceiveQueue.limitReached(srq);   // the SRQ's own listener; the device's hear of it too
                }
                String name = IbvAsyncEvent.name(type);
                boolean fatal = IbvAsyncEvent.fatal(type);
                for (VerbsDevice d : OPEN.getOrDefault(context.address(), List.of())) {
                    DeviceEventHandler h = d.eventHandler;
                    if (h == null) {
                        continue;
                    }
                    try {
                        h.onDeviceEvent(name, fatal, qpNum, port);
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.WARNING, "a device event handler threw on " + name, e);
                    }
                }
            }
        }
        return n;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            List<VerbsDevice> same = OPEN.get(context.address());
            if (same != null) {
                same.remove(this);
            }
            LibIbverbs.deallocPd(pd);
            synchronized (VerbsDevice.class) {
                eventArena.close();
            }
        }
    }
}
