package dev.jrdma;

import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.engine.admission.AcceptPolicy;
import dev.jrdma.engine.admission.SourcePenalties;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.memory.PooledBlock;
import dev.jrdma.memory.RegisteredMemoryPool;
import dev.jrdma.memory.RegistrationCache;
import dev.jrdma.runtime.IdleWait;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.Provider;
import dev.jrdma.spi.Providers;
import dev.jrdma.spi.SourceAddress;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The entry point: a device opened through a provider, its IO threads, and everything made from
 * it (servers, connections, regions), all closed by {@link #close()}.
 *
 * <pre>{@code
 * try (Rdma rdma = Rdma.builder().device("rxe0").build()) {
 *     Connection c = rdma.connect(new InetSocketAddress("10.0.0.1", 7471));
 *     LocalRegion buf = rdma.allocate(4096);
 *     c.write(buf, remote).join();
 * }
 * }</pre>
 */
public final class Rdma implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /**
     * {@code ioThreads(INLINE)}: no IO thread; the application drives progress with
     * {@link #poll()} (and the library's blocking calls poll while they wait).
     */
    public static final int INLINE = 0;

    private final Provider provider;
    private final Device device;
    private final String providerChoice;
    private final ConnectionManager cm;
    private final IoThread[] io;
    private final CompletionChannel[] channels;
    private final AtomicInteger nextIo = new AtomicInteger();
    /** Driven instances ({@link Builder#ioLoops}): the public side of each IO thread; else empty. */
    private final IoLoop[] loops;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Set<SharedReceiveQueue> sharedQueues = ConcurrentHashMap.newKeySet();
    private final Set<DatagramEndpoint> datagramEndpoints = ConcurrentHashMap.newKeySet();
    private final Set<RdmaServer> servers = ConcurrentHashMap.newKeySet();
    /** What every open region holds (not the regions: a dropped one can be collected and reported). */
    private final Set<RegionResources> regions = ConcurrentHashMap.newKeySet();
    /** Leak detection (Builder.leakDetection): regions being watched, and where collected ones are queued. */
    private final boolean leakDetection;
    private final Set<RegionLeak> watched = ConcurrentHashMap.newKeySet();
    private final java.lang.ref.ReferenceQueue<LocalRegion> collected = new java.lang.ref.ReferenceQueue<>();
    private final CmEventHandler cmHandler = new CmHandler();
    /** Which connection requests the servers take (and who failed or misused one lately): IO thread 0's (the CM handler's). */
    private final AcceptPolicy acceptPolicy;
    /** Connections by QP number, for device events about a QP. */
    private final java.util.Map<Integer, Connection> byQpNum = new ConcurrentHashMap<>();
    /** Per port, how often it came up: a port-down check acts only if it has not come up since. */
    private final java.util.Map<Integer, Long> portUps = new ConcurrentHashMap<>();
    private final Consumer<DeviceEvent> onDeviceEvent;
    /** Time for deadlines that tests may need to move (an emulated atomic's): System.nanoTime unless a test set it. */
    private final java.util.function.LongSupplier clock;
    private volatile boolean closed;
    /** Registered memory for {@link #allocate}: chunks registered for local access; peers get exposures. */
    private final RegisteredMemoryPool pool;
    /** The application's own memory, registered once per range and access (see {@link #register}). */
    private final RegistrationCache registrations;
    private final int maxRemoteAccess;
    /** Ends leases; made by the first one, guarded by this. */
    private java.util.concurrent.ScheduledExecutorService leaseTimer;
    /**
     * The kernel's accept queue for each listener (capped by net.core.somaxconn): a connection
     * waiting there costs kernel memory only, and one that finds it full has its SYN dropped and
     * waits a second for the retry. Deep, so that a flood of sockets does not push honest clients
     * out before they are looked at (the connection manager takes them quickly and bounds itself).
     */
    static final int LISTEN_BACKLOG = 4096;
    private static final int REMOTE_ACCESS = AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC;

    private Rdma(Builder b) {
        Chosen chosen = b.chooseAndOpen();
        this.provider = chosen.provider();
        this.device = chosen.device();
        this.providerChoice = chosen.reason();
        this.onDeviceEvent = b.onDeviceEvent;
        this.clock = b.clock;
        this.maxRemoteAccess = b.maxRemoteAccess;
        this.leakDetection = b.leakDetection;
        if (b.memoryBudget > 0) {
            try {
                device.checkMemoryBudget(b.memoryBudget);
            } catch (RuntimeException e) {
                device.close();
                throw e;
            }
        }
        this.acceptPolicy = new AcceptPolicy(b.sourcePenalties ? new SourcePenalties() : null, b.maxConnections,
                b.maxConnectionsPerSource > 0 ? b.maxConnectionsPerSource
                        : Math.min(b.maxConnections, Math.max(1024, b.maxConnections / 4)));
        this.pool = new RegisteredMemoryPool(device, AccessFlags.LOCAL_WRITE, b.hugePages);
        this.registrations = new RegistrationCache(device);
        int n = b.ioLoops > 0 ? b.ioLoops : Math.max(1, b.ioThreads);
        this.io = new IoThread[n];
        this.loops = new IoLoop[b.ioLoops];
        this.channels = new CompletionChannel[n];
        ConnectionManager manager = null;
        try {
            manager = device.createConnectionManager(new ConnectionLimits(b.maxPendingHandshakes, b.handshakeTimeout.toNanos(),
                    b.idleTimeout.toNanos()));
            for (int i = 0; i < n; i++) {
                channels[i] = device.createCompletionChannel();
                CompletionChannel ch = channels[i];
                if (b.ioLoops == 0 && (b.ioThreads == INLINE || b.completionMode == CompletionMode.POLLING)) {
                    ch.pollingOnly();   // nobody arms or sleeps on it
                }
                int[] fds = i != 0 ? new int[] {ch.fd()}
                        : device.eventFd() < 0 ? new int[] {ch.fd(), manager.fd()} : new int[] {ch.fd(), manager.fd(), device.eventFd()};
                String name = "jrdma-io-" + device.name() + "-" + i;
                io[i] = b.ioLoops > 0 ? IoThread.driven(name, fds, ch::drainEvents)
                        : b.singleThreaded ? IoThread.confined(name, fds, ch::drainEvents, Thread.currentThread())
                        : b.ioThreads == INLINE ? IoThread.inline(name, fds, ch::drainEvents)
                        : new IoThread(name, idleWait(b.completionMode), fds, ch::drainEvents,
                        b.cpus.length == 0 ? -1 : b.cpus[i % b.cpus.length]);
            }
            for (int i = 0; i < n; i++) {
                CompletionChannel ch = channels[i];
                IoThread t = io[i];
                if (ch.readinessDriven()) {
                    // First on its thread: which resting connections' sockets are ready, each pass.
                    t.execute(() -> t.add(ch::pollReadiness));
                }
                t.execute(() -> t.addTimer(ch::checkIdle));   // keep-alives and idle timeouts
            }
            for (int i = 0; i < loops.length; i++) {
                loops[i] = new IoLoop(this, io[i], i);
            }
            ConnectionManager m = manager;
            io[0].execute(() -> io[0].add(() -> m.processEvents(cmHandler)));
            device.onEvents(this::onDeviceEvent);
            // Device events are rare: read them on the timer (every sleep, and every 1024 idle passes).
            io[0].execute(() -> io[0].addTimer(device::pollEvents));
        } catch (RuntimeException e) {
            for (IoThread t : io) {
                if (t != null) {
                    t.close();
                }
            }
            for (CompletionChannel c : channels) {
                if (c != null) {
                    c.close();
                }
            }
            if (manager != null) {
                manager.close();
            }
            device.close();
            throw e;
        }
        this.cm = manager;
    }

    /** The IO thread's side of a completion mode. */
    private static IdleWait idleWait(CompletionMode mode) {
        return switch (mode) {
            case POLLING -> IdleWait.SPIN;
            case EVENT -> IdleWait.SLEEP;
            case ADAPTIVE -> IdleWait.SPIN_THEN_SLEEP;
        };
    }

    /**
     * A builder: provider, device, completion mode, IO threads and limits; {@code build()} opens it.
     *
     * @return this builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * {@code builder().build()}: the automatic provider, the first active device, one IO thread.
     *
     * @return the open {@code Rdma}; close it to release everything it made
     */
    public static Rdma open() {
        return builder().build();
    }

    /**
     * {@return the provider in use: {@code verbs}, {@code shm} or {@code tcp} (for {@code auto}, the one
     * it chose)}
     */
    public String providerName() {
        return provider.name();
    }

    /**
     * Why this provider: "tcp, as asked", or for auto what was found ("auto: tcp, because verbs …").
     *
     * @return the provider and why it was chosen
     */
    public String providerChoice() {
        return providerChoice;
    }

    /**
     * {@return what {@code provider("auto")} chooses on this machine now, and why (it opens the device to
     * be sure, and closes it again)}
     */
    public static String autoChoice() {
        Chosen c = builder().chooseAndOpen();
        c.device().close();
        return c.reason();
    }

    /**
     * The RDMA devices of this machine with their ports and GIDs, as {@code ibv_devinfo -v} shows
     * them (each is opened briefly to read it). Empty when there is none.
     *
     * @return the devices, in the order libibverbs lists them
     * @throws ProviderUnavailableException when the verbs provider cannot look: libibverbs or
     *                                      librdmacm do not load, or native access is off (the
     *                                      message says which, and how to fix it)
     * @throws RdmaException                when a device cannot be opened or queried
     */
    public static List<DeviceInfo> devices() {
        List<DeviceInfo> all = new ArrayList<>();
        for (Provider p : Providers.all()) {
            all.addAll(p.devices());
        }
        return List.copyOf(all);
    }

    /** {@return every provider of this build, by name, and whether it can run here now (and if not, why)} */
    public static List<ProviderStatus> providers() {
        List<ProviderStatus> all = new ArrayList<>();
        for (Provider p : Providers.all()) {
            ProviderUnavailableException cause = p.unavailabilityCause();
            all.add(new ProviderStatus(p.name(), cause == null ? null : cause.getMessage()));
        }
        return List.copyOf(all);
    }

    /** A provider and the device opened on it. */
    record Chosen(Provider provider, Device device, String reason) {
    }

    /**
     * {@return the device in use: an RDMA device's name on verbs ({@code rxe0}, {@code mlx5_0}), the
     * provider's name on the software providers}
     */
    public String deviceName() {
        return device.name();
    }

    /**
     * {@return what the device can do, as far as jrdma uses it: queue and atomic limits, atomics, masked
     * atomics, SRQ, ODP}
     */
    public DeviceCapabilities capabilities() {
        return device.capabilities();
    }

    /**
     * INLINE mode ({@code ioThreads(Rdma.INLINE)}): does the work that is there (completions,
     * connection events, callbacks), on the calling thread, without blocking; returns how much
     * (0: none). One thread polls at a time: a concurrent call returns 0.
     *
     * @return how much work was done (0: none)
     * @throws IllegalStateException when this instance has IO threads
     */
    public int poll() {
        return io[0].poll();
    }

    /**
     * IO loop {@code index} of an instance built with {@link Builder#ioLoops}: the handle through
     * which one thread of the application drives it.
     *
     * @param index 0 .. {@link #ioLoopCount()} - 1
     * @return the loop
     * @throws IllegalStateException when this instance has no IO loops (it has IO threads, or is INLINE)
     * @throws IndexOutOfBoundsException when there is no such loop
     */
    public IoLoop ioLoop(int index) {
        if (loops.length == 0) {
            throw new IllegalStateException("this Rdma has no IO loops (Builder.ioLoops): "
                    + (io[0].isInline() ? "it is INLINE (poll())" : "its IO threads drive it"));
        }
        java.util.Objects.checkIndex(index, loops.length);
        return loops[index];
    }

    /** {@return how many IO loops ({@link Builder#ioLoops}) it has; 0 when its IO threads drive it, or it is INLINE} */
    public int ioLoopCount() {
        return loops.length;
    }

    /**
     * {@return the kernel thread ids of the IO threads (empty in INLINE mode), e.g} to check their CPU
     * affinity.
     */
    public int[] ioThreadIds() {
        if (io[0].isInline()) {
            return new int[0];
        }
        int[] ids = new int[io.length];
        for (int i = 0; i < io.length; i++) {
            ids[i] = io[i].tid();
        }
        return ids;
    }

    /** The IO of a single-threaded instance ({@link Builder#singleThreaded}), whose thread alone may post; else null. */
    IoThread confinedIo() {
        return io[0].isConfined() ? io[0] : null;
    }

    /** Waits for {@code f} (a control-path step), driving progress meanwhile in INLINE mode. */
    <T> T await(CompletableFuture<T> f, java.time.Duration timeout) {
        try {
            return io[0].await(f, timeout.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while waiting");
        } catch (java.util.concurrent.TimeoutException e) {
            throw new RdmaTimeoutException("did not complete within " + timeout);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    // ---------------------------------------------------------------- memory

    /**
     * {@code size} zeroed bytes of registered memory, lent by the pool (no registration of its
     * own: allocating and closing cost no system call). Peers reach it through {@link LocalRegion#toRemote()}.
     *
     * @param size the number of members
     * @return the region; close it to give the memory back
     * @throws IllegalArgumentException when {@code size} is not positive
     */
    public LocalRegion allocate(long size) {
        return allocate(size, true, "allocate");
    }

    /**
     * Like {@link #allocate} but not zeroed, which saves writing {@code size} bytes. Unsafe in
     * the sense that the memory holds what the block's previous user left there: data of this
     * process, which a peer given {@link LocalRegion#toRemote() read access} before every byte
     * was written over can read. Use it for buffers that are filled completely before use.
     *
     * @param size the number of members
     * @return the region; close it to give the memory back
     */
    public LocalRegion allocateUninitialized(long size) {
        return allocate(size, false, "allocateUninitialized");
    }

    private LocalRegion allocate(long size, boolean zero, String op) {
        checkOpen();
        if (size <= 0) {
            throw new IllegalArgumentException(op + ": size must be positive, not " + size);
        }
        PooledBlock block = pool.allocate(size, zero);
        return track(new LocalRegion(block.segment(), block.registration(), block, this, true));
    }

    /**
     * Registers memory the application owns (it stays the owner: closing the region only
     * deregisters). Native memory only: an Arena's or a mapped file's. Registering the same
     * range with the same access again is cheap: the regions share one registration, dropped
     * (and its rkey revoked) when the last of them closes.
     *
     * @param segment the memory to register
     * @param access the access to grant (local write is always there)
     * @return the region; close it to deregister
     * @throws IllegalArgumentException for a heap segment, for REMOTE_WRITE or REMOTE_ATOMIC
     *         without LOCAL_WRITE, and for remote rights beyond {@link Builder#maxRemoteAccess}
     */
    public LocalRegion register(MemorySegment segment, Access... access) {
        int bits = checkRegistrable("register", segment, access);
        return registered(new LocalRegion(segment, registrations.register(segment, bits), null, this, false), "register");
    }

    /**
     * Registers memory the application owns for on-demand paging (explicit ODP): its pages are
     * not pinned, the device faults them in when it touches them, so memory larger than
     * RLIMIT_MEMLOCK, or mapped files, can be registered. Same rules as {@link #register}.
     *
     * @param segment the memory to register
     * @param access the access to grant (local write is always there)
     * @return the region; close it to deregister
     * @throws UnsupportedCapabilityException when the device has no ODP (rxe, siw, the software
     *         providers), naming the device and the capability
     */
    public LocalRegion registerOnDemand(MemorySegment segment, Access... access) {
        int bits = checkRegistrable("registerOnDemand", segment, access);
        return registered(new LocalRegion(segment, device.registerOnDemand(segment, bits), null, this, false),
                "registerOnDemand");
    }

    /**
     * One on-demand-paging registration for the whole address space (implicit ODP), for local
     * use: {@link LocalRegion#slice slice(address, length)} of it is a buffer for operations,
     * any native memory of this process, with no registration of its own. Remote rights are
     * refused: they would open the whole process to the peer.
     *
     * @return the region; close it to deregister
     * @throws UnsupportedCapabilityException when the device has no implicit ODP
     */
    public LocalRegion registerAddressSpaceOnDemand() {
        checkOpen();
        MemoryRegistration r = device.registerImplicitOnDemand(AccessFlags.LOCAL_WRITE);
        return registered(new LocalRegion(r.memory(), r, null, this, false), "registerAddressSpaceOnDemand");
    }

    /**
     * Registers {@code length} bytes at physical address {@code physicalAddress} (SnowRDMA's
     * PA-MR), where the device and its driver allow it.
     *
     * @param physicalAddress the physical address of the first byte
     * @param length the length in bytes
     * @param access the access to grant (local write is always there)
     * @return the region; close it to deregister
     * @throws UnsupportedCapabilityException on the devices jrdma knows: rdma-core has no
     *         user-space call for it; the message names the device
     */
    public LocalRegion registerPhysical(long physicalAddress, long length, Access... access) {
        checkOpen();
        if (length <= 0) {
            throw new IllegalArgumentException("registerPhysical: length must be positive, not " + length);
        }
        MemoryRegistration r = device.registerPhysical(physicalAddress, length, Access.bits(access));
        return registered(new LocalRegion(r.memory(), r, null, this, false), "registerPhysical");
    }

    /** Tracks {@code r}, which {@code what} registered, and records its RegionRegistered event. */
    private LocalRegion registered(LocalRegion r, String what) {
        track(r);
        JrdmaEvents.regionRegistered(r.address(), r.length(), AccessFlags.names(r.resources().registration.access()), what,
                deviceName());
        return r;
    }

    /** The checks of {@link #register}; returns the access bits. */
    private int checkRegistrable(String op, MemorySegment segment, Access... access) {
        checkOpen();
        Objects.requireNonNull(segment, "segment");
        if (!segment.isNative()) {
            throw new IllegalArgumentException(op + ": only native memory can be registered (an Arena's, or a mapped file's), not a heap segment");
        }
        int bits = Access.bits(access);
        if ((bits & (Access.REMOTE_WRITE.bit | Access.REMOTE_ATOMIC.bit)) != 0 && (bits & Access.LOCAL_WRITE.bit) == 0) {
            throw new IllegalArgumentException(op + ": REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (a verbs rule)");
        }
        int beyond = bits & REMOTE_ACCESS & ~maxRemoteAccess;
        if (beyond != 0) {
            throw new IllegalArgumentException(op + ": " + AccessFlags.names(beyond)
                    + " is beyond what this Rdma lets peers have (maxRemoteAccess " + AccessFlags.names(maxRemoteAccess) + ")");
        }
        return bits;
    }

    /**
     * {@return whether the calling thread is one of this instance's IO threads: callbacks run there, and a
     * callback must not block it (close from one returns without waiting for the teardown)}
     */
    public boolean isIoThread() {
        for (IoThread t : io) {
            if (t.inThisThread()) {
                return true;
            }
        }
        return false;
    }

    /** {@return whether the pool got huge pages ({@link Builder#hugePages}) for any of its memory} */
    public boolean hugePagesInUse() {
        return pool.hugePagesInUse();
    }

    /** The remote rights a region may grant ({@link Builder#maxRemoteAccess}), as access bits. */
    int maxRemoteAccessBits() {
        return maxRemoteAccess;
    }

    /** A registration of {@code segment} for peers (a pooled region's exposure). */
    MemoryRegistration registerExposure(MemorySegment segment, int access) {
        checkOpen();
        return device.register(segment, access);
    }

    /** A registration of {@code segment} that only the peer of {@code qp} may use. */
    Device device() {
        return device;
    }

    /** Whether {@code toRemoteFor} binds memory windows here (verbs with type 2B windows). */
    boolean bindsWindows() {
        return device.bindsWindows();
    }

    MemoryRegistration registerExposureFor(QueuePair qp, MemorySegment segment, int access) {
        checkOpen();
        return device.registerFor(qp, segment, access);
    }

    /** Runs {@code end} after {@code after} on the lease timer (a thread started by the first lease, ended by close). */
    void scheduleLeaseEnd(java.time.Duration after, Runnable end) {
        java.util.concurrent.ScheduledExecutorService timer;
        synchronized (this) {
            checkOpen();
            if (leaseTimer == null) {
                java.util.concurrent.ScheduledThreadPoolExecutor t = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
                    Thread th = new Thread(r, "jrdma-leases-" + device.name());
                    th.setDaemon(true);
                    return th;
                });
                t.setRemoveOnCancelPolicy(true);
                leaseTimer = t;
            }
            timer = leaseTimer;
        }
        timer.schedule(() -> {
            try {
                end.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "ending a lease failed", e);
            }
        }, Math.max(1, after.toNanos()), TimeUnit.NANOSECONDS);
    }

    void untrack(RegionResources r) {
        regions.remove(r);
        RegionLeak leak = r.leak;
        if (leak != null) {
            watched.remove(leak);
            leak.clear();
        }
    }

    private LocalRegion track(LocalRegion r) {
        regions.add(r.resources());
        if (leakDetection) {
            reportLeaks();
            RegionLeak leak = new RegionLeak(r, collected);
            r.resources().leak = leak;
            watched.add(leak);
        }
        return r;
    }

    /**
     * Logs each region that was garbage-collected without {@link LocalRegion#close()}, with where it
     * was made; its memory stays registered until this {@code Rdma} closes (releasing it earlier
     * could hand it to another region while an operation still targets it). Runs when a region
     * is made and at close; returns the stack of each it reported.
     */
    java.util.List<Throwable> reportLeaks() {
        java.util.List<Throwable> found = new java.util.ArrayList<>();
        java.lang.ref.Reference<? extends LocalRegion> ref;
        while ((ref = collected.poll()) != null) {
            RegionLeak leak = (RegionLeak) ref;
            if (watched.remove(leak) && !leak.resources.isClosed()) {
                found.add(leak.madeAt);
                LOG.log(System.Logger.Level.WARNING, "leak: " + leak.resources + " was garbage-collected without close();"
                        + " its memory stays registered until the Rdma closes. It was made here:", leak.madeAt);
            }
        }
        return found;
    }

    /** Watches one region for leak detection: enqueued once the region is unreachable. */
    static final class RegionLeak extends java.lang.ref.PhantomReference<LocalRegion> {
        final RegionResources resources;
        final Throwable madeAt;

        RegionLeak(LocalRegion region, java.lang.ref.ReferenceQueue<LocalRegion> queue) {
            super(region, queue);
            this.resources = region.resources();
            this.madeAt = new Throwable(resources + " was made here");
        }
    }

    // ---------------------------------------------------------------- shared receive queues

    /**
     * A pool of {@code buffers} receive buffers of {@code bufferSize} bytes that connections of
     * this instance share ({@link ConnectionConfig.Builder#sharedReceiveQueue}), growable to
     * {@code capacity} by {@link SharedReceiveQueue#addBuffers}. Every buffer is registered and
     * posted now.
     *
     * @param buffers    buffers to start with, 1 or more
     * @param bufferSize bytes of each: the largest message a connection using it receives
     * @param capacity   the most buffers it may hold, at least {@code buffers}, at most 2^20 (a
     *                   connection's completion queue is sized for it: every receive may
     *                   complete on one connection)
     * @return the queue; close it after the connections using it (this instance's close does)
     * @throws UnsupportedCapabilityException when the device has no shared receive queues
     * @throws IllegalArgumentException                            for values out of range
     */
    public SharedReceiveQueue sharedReceiveQueue(int buffers, int bufferSize, int capacity) {
        checkOpen();
        // A device without them refuses in Device.createSrq, naming itself.
        SharedReceiveQueue q = new SharedReceiveQueue(this, device, buffers, bufferSize, capacity);
        sharedQueues.add(q);
        return q;
    }

    /**
     * A shared receive queue of {@code buffers} buffers of {@code bufferSize} bytes that does not
     * grow: {@link #sharedReceiveQueue(int, int, int)} with a capacity of {@code buffers}.
     *
     * @param buffers    buffers, 1 or more
     * @param bufferSize bytes of each
     * @return the queue
     */
    public SharedReceiveQueue sharedReceiveQueue(int buffers, int bufferSize) {
        return sharedReceiveQueue(buffers, bufferSize, buffers);
    }

    /**
     * An endpoint for unreliable datagrams and multicast ({@link DatagramEndpoint}) bound to
     * {@code bind}, with {@code receiveBuffers} buffers of its {@link DatagramEndpoint#maxMessageSize()}
     * (plus 40 bytes) posted, and up to 64 sends in flight.
     *
     * @param bind           an address of this instance's device (port 0: any free one); on verbs
     *                       an IP address of the RDMA device, on tcp/shm any local address
     * @param receiveBuffers 1 to 65536
     * @return the endpoint; close it (this instance's close does)
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException when the provider has no datagrams
     */
    public DatagramEndpoint datagramEndpoint(InetSocketAddress bind, int receiveBuffers) {
        return datagramEndpoint(bind, receiveBuffers, 64);
    }

    /**
     * {@link #datagramEndpoint(InetSocketAddress, int)} with {@code sendDepth} sends in flight at
     * once (1 to 4096): a send beyond them fails at once, naming the depth.
     *
     * @param bind           the address to bind
     * @param receiveBuffers 1 to 65536
     * @param sendDepth      1 to 4096
     * @return the endpoint
     */
    public DatagramEndpoint datagramEndpoint(InetSocketAddress bind, int receiveBuffers, int sendDepth) {
        return datagramEndpoint(bind, receiveBuffers, sendDepth, DatagramEndpoint.DEFAULT_MAX_SENDERS);
    }

    /**
     * {@link #datagramEndpoint(InetSocketAddress, int, int)} whose sender table keeps at most
     * {@code maxSenders} senders (default {@value DatagramEndpoint#DEFAULT_MAX_SENDERS}), the least
     * recently seen evicted for a new one.
     *
     * @param bind           the address to bind
     * @param receiveBuffers 1 to 65536
     * @param sendDepth      1 to 4096
     * @param maxSenders     1 to {@value DatagramEndpoint#MAX_SENDERS_LIMIT}
     * @return the endpoint
     */
    public DatagramEndpoint datagramEndpoint(InetSocketAddress bind, int receiveBuffers, int sendDepth, int maxSenders) {
        checkOpen();
        DatagramEndpoint.checkMaxSenders(maxSenders);
        if (bind == null || bind.isUnresolved()) {
            throw new IllegalArgumentException("datagramEndpoint needs a resolved address to bind, not " + bind);
        }
        if (receiveBuffers < 1 || receiveBuffers > 65536) {
            throw new IllegalArgumentException("receiveBuffers must be 1 to 65536, not " + receiveBuffers);
        }
        if (sendDepth < 1 || sendDepth > 4096) {
            throw new IllegalArgumentException("sendDepth must be 1 to 4096, not " + sendDepth);
        }
        IoThread t = pickIo();
        CompletionChannel ch = channels[indexOf(t)];
        CompletableFuture<DatagramQueuePair> opened = new CompletableFuture<>();
        io[0].execute(() -> {
            try {
                opened.complete(cm.openDatagram(bind, ch, sendDepth, receiveBuffers));
            } catch (RuntimeException e) {
                opened.completeExceptionally(e);
            }
        });
        DatagramQueuePair qp = await(opened, CONTROL_TIMEOUT);
        DatagramEndpoint e;
        try {
            e = new DatagramEndpoint(this, t, qp, receiveBuffers, CONTROL_TIMEOUT.dividedBy(3), maxSenders);
        } catch (RuntimeException x) {
            io[0].execute(qp::close);
            throw x;
        }
        datagramEndpoints.add(e);
        return e;
    }

    void datagramEndpointClosed(DatagramEndpoint e) {
        datagramEndpoints.remove(e);
    }

    void sharedReceiveQueueClosed(SharedReceiveQueue q) {
        sharedQueues.remove(q);
    }

    /** Runs {@code task} on IO thread 0 (control callbacks: the low-water one of a shared receive queue). */
    void onControlThread(Runnable task) {
        io[0].execute(task);
    }

    // ---------------------------------------------------------------- connections

    /**
     * Listens with the default config.
     *
     * @param address the address to listen on (port 0: any free port)
     * @param onAccept called on the IO thread with each connection once it is established
     * @return the server; close it to stop listening
     */
    public RdmaServer listen(InetSocketAddress address, Consumer<Connection> onAccept) {
        return listen(address, ConnectionConfig.defaults(), onAccept);
    }

    /**
     * Listens on {@code address}; {@code config} applies to every accepted connection (its
     * auth token, if any, must match the client's).
     *
     * @param address the address to listen on (port 0: any free port)
     * @param config how the connection is set up
     * @param onAccept called on the IO thread with each connection once it is established
     * @return the server; close it to stop listening
     */
    public RdmaServer listen(InetSocketAddress address, ConnectionConfig config, Consumer<Connection> onAccept) {
        checkOpen();
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(onAccept, "onAccept");
        checkConfig(config);
        CompletableFuture<RdmaServer> f = new CompletableFuture<>();
        io[0].execute(() -> {
            try {
                CmListener l = cm.listen(address, LISTEN_BACKLOG);
                RdmaServer s = new RdmaServer(this, l, config, onAccept);
                servers.add(s);
                String warning = exposureWarning(l.address(), config);
                if (warning != null) {
                    LOG.log(System.Logger.Level.WARNING, warning);
                }
                f.complete(s);
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return await(f, CONTROL_TIMEOUT);
    }

    /**
     * What {@link #listen} warns of (once per listener), or null: a listener that other hosts can
     * reach and that asks no auth token lets anyone who reaches the port connect.
     */
    static String exposureWarning(InetSocketAddress bound, ConnectionConfig config) {
        if (bound.getAddress().isLoopbackAddress() || config.authTokenRef().length > 0) {
            return null;
        }
        return "listening on " + bound + " without an auth token: anyone who can reach this port can connect, send"
                + " messages, and read, write and run atomics on every region whose descriptor (address, length, key)"
                + " it is given or guesses; set ConnectionConfig.authToken to refuse other clients. The token travels"
                + " in clear and can be replayed: across networks you do not trust, run jrdma inside a VPN or IPsec"
                + " (see the README's security section)";
    }

    /** The longest a control step on the IO thread (listen, close) may take. */
    private static final java.time.Duration CONTROL_TIMEOUT = java.time.Duration.ofSeconds(30);

    void closeServer(RdmaServer s) {
        servers.remove(s);
        CompletableFuture<Void> done = new CompletableFuture<>();
        io[0].execute(() -> {
            s.listener.close();
            done.complete(null);
        });
        if (!io[0].inThisThread()) {
            await(done, CONTROL_TIMEOUT);
        }
    }

    /**
     * Connects with the default config, waiting up to its timeout.
     *
     * @param address the server's address
     * @return this connection
     */
    public Connection connect(InetSocketAddress address) {
        return connect(address, ConnectionConfig.defaults());
    }

    /**
     * Connects to a server with {@code config}, waiting until the connection is established or fails
     * (within {@link ConnectionConfig#timeout()}).
     *
     * @param address the server's address
     * @param config how the connection is set up
     * @return this connection
     */
    public Connection connect(InetSocketAddress address, ConnectionConfig config) {
        // connectAsync's future ends by the timeout itself; the margin is for the IO thread.
        return await(connectAsync(address, config), config.timeout().plusSeconds(5));
    }

    /**
     * Starts connecting; the future completes when the connection is established, or fails with why not.
     *
     * @param address the server's address
     * @param config how the connection is set up
     * @return a future of the connection, once established; exceptionally with why it could not be
     */
    public CompletableFuture<Connection> connectAsync(InetSocketAddress address, ConnectionConfig config) {
        return connectLife(address, config, null, null);
    }

    /**
     * Connects without waiting, the connection served by {@code loop}: its completions and
     * callbacks run on the thread that drives that loop (an event loop's own connection).
     *
     * @param address the server's address
     * @param config  how the connection is set up
     * @param loop    one of this instance's IO loops ({@link #ioLoop})
     * @return a future of the connection, once established; exceptionally with why it could not be
     * @throws IllegalArgumentException when {@code loop} is another instance's
     */
    public CompletableFuture<Connection> connectAsync(InetSocketAddress address, ConnectionConfig config, IoLoop loop) {
        Objects.requireNonNull(loop, "loop");
        if (loop.rdma() != this) {
            throw new IllegalArgumentException("connectAsync: " + loop + " belongs to another Rdma");
        }
        return connectLife(address, config, null, loop.io());
    }

    /** Connects; for a reconnect, the new connection is a further life of {@code handle}. */
    CompletableFuture<Connection> connectLife(InetSocketAddress address, ConnectionConfig config, Connection handle) {
        // A further life stays on the first one's IO thread: its callbacks keep their thread.
        return connectLife(address, config, handle, handle == null ? null : handle.io);
    }

    private CompletableFuture<Connection> connectLife(InetSocketAddress address, ConnectionConfig config, Connection handle,
                                                      IoThread on) {
        checkOpen();
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(config, "config");
        checkConfig(config);
        IoThread t = on != null ? on : pickIo();
        Connection c = new Connection(this, t, config, address, null, handle);
        connections.add(c);
        int timeoutMs = (int) config.timeout().toMillis();
        io[0].execute(() -> c.life.connect(device, channels[indexOf(t)], cm));
        // A timer of its own, not orTimeout on the future itself: that would fail it with a bare
        // TimeoutException before failConnect could give the reason (and clean up). It is
        // dropped as soon as the connect ends either way.
        CompletableFuture<Void> timer = new CompletableFuture<>();
        c.life.connected.whenComplete((v, e) -> timer.complete(null));
        timer.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).exceptionally(e -> {
            if (e instanceof java.util.concurrent.TimeoutException && !closed) {
                io[0].execute(() -> c.life.failConnect(new RdmaTimeoutException("connecting to " + address
                        + " did not complete within " + config.timeout())));
            }
            return null;
        });
        return c.life.connected;
    }

    private IoThread pickIo() {
        return io[Math.floorMod(nextIo.getAndIncrement(), io.length)];
    }

    int indexOf(IoThread t) {
        for (int i = 0; i < io.length; i++) {
            if (io[i] == t) {
                return i;
            }
        }
        throw new IllegalStateException();
    }

    /** Released connections whose receive buffers wait for lent messages to close; freed at close at the latest. */
    private final Set<Connection> holdingMemory = ConcurrentHashMap.newKeySet();

    void memoryHeld(Connection c) {
        holdingMemory.add(c);
        if (closed) {
            c.freeMemory();
        }
    }

    void memoryFreed(Connection c) {
        holdingMemory.remove(c);
    }

    void forget(Connection c) {
        connections.remove(c);
        byQpNum.values().remove(c);
    }

    void queuePairCreated(int qpNum, Connection c) {
        byQpNum.put(qpNum, c);
    }

    /** On IO thread 0: a fatal event fails its connection (or all, for the device), then the listener hears of it. */
    private void onDeviceEvent(String type, boolean fatal, int qpNum, int port) {
        Connection c = qpNum < 0 ? null : byQpNum.get(qpNum);
        if (qpNum >= 0 && c == null) {
            return;   // another instance's QP on the same device
        }
        LOG.log(fatal ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "{0}: {1}{2}{3}", device.name(), type,
                port >= 0 ? " on port " + port : "", c != null ? " for " + c : "");
        if (port >= 0 && type.equals("IBV_EVENT_PORT_ACTIVE")) {
            portUps.merge(port, 1L, Long::sum);
        } else if (port >= 0 && type.equals("IBV_EVENT_PORT_ERR")) {
            // A device must fail what is outstanding on a dead link within its retry budget; one that stalls is made to.
            long ups = portUps.getOrDefault(port, 0L);
            java.util.Map<Integer, Long> upsNow = portUps;   // not this Rdma: a pending check holds only the map
            java.util.function.BooleanSupplier stillDown = () -> upsNow.getOrDefault(port, 0L) == ups;
            String name = device.name();
            for (Connection each : connections) {
                try {
                    each.io.execute(() -> each.life.portWentDown(name, port, stillDown));
                } catch (RuntimeException e) {   // its IO thread closed meanwhile
                    LOG.log(System.Logger.Level.DEBUG, "port {0} down: {1}", port, e.toString());
                }
            }
        }
        if (fatal) {
            String why = device.name() + " reported " + type + (c != null ? " for the QP " + qpNum : "");
            if (c != null) {
                c.io.execute(() -> c.life.deviceFailed(why));
            } else if (type.equals("IBV_EVENT_DEVICE_FATAL")) {
                for (Connection each : connections) {
                    each.io.execute(() -> each.life.deviceFailed(why));
                }
            }
        }
        Consumer<DeviceEvent> l = onDeviceEvent;
        if (l != null) {
            try {
                l.accept(new DeviceEvent(device.name(), type, fatal, port, qpNum, c == null ? null : c.handle()));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the device event listener threw", e);
            }
        }
    }

    java.util.function.LongSupplier clock() {
        return clock;
    }

    /** Acknowledges pending CQ events of an IO thread's channel (before a CQ is destroyed). */
    void drainCompletionEvents(IoThread t) {
        channels[indexOf(t)].drainEvents();
    }

    /** The rdma_cm events, on IO thread 0. */
    private final class CmHandler implements CmEventHandler {
        @Override
        public void onConnectRequest(CmListener listener, CmEndpoint request, byte[] privateData) {
            RdmaServer server = null;
            for (RdmaServer s : servers) {
                if (s.listener == listener) {
                    server = s;
                }
            }
            if (server == null || server.isClosed() || closed) {
                request.reject(Handshake.rejection("the server is closing"));
                request.close();
                return;
            }
            Handshake peer = Handshake.decode(privateData);
            String refusal = acceptPolicy.refusal(request.remoteAddress(), server.config.authTokenRef(), peer.token(),
                    connections.size(), Rdma.this::fromSource);
            if (refusal != null) {
                request.reject(Handshake.rejection(refusal));
                request.close();
                return;
            }
            IoThread t = pickIo();
            Connection c = new Connection(Rdma.this, t, server.config, request.remoteAddress(), server);
            connections.add(c);
            c.life.accept(request, peer, device, channels[indexOf(t)]);
        }

        @Override
        public void onEstablished(CmEndpoint endpoint, byte[] privateData) {
            if (endpoint.attachment() instanceof Connection c) {
                c.life.onEstablished(privateData);
            }
        }

        @Override
        public void onRejected(CmEndpoint endpoint, int status, byte[] privateData) {
            if (endpoint.attachment() instanceof Connection c) {
                c.life.onRejected(status, privateData);
            }
        }

        @Override
        public void onError(CmEndpoint endpoint, String what, int status) {
            if (endpoint.attachment() instanceof Connection c) {
                c.life.onConnectError(what, status);
            }
        }

        @Override
        public void onDisconnected(CmEndpoint endpoint) {
            if (endpoint.attachment() instanceof Connection c) {
                c.io.execute(c.life::peerDisconnected);
            }
        }

        @Override
        public byte[] rejection(String reason) {
            return Handshake.rejection(reason);
        }

        @Override
        public void onPeerOffence(CmEndpoint endpoint, String what) {
            if (endpoint.attachment() instanceof Connection c && c.server != null) {
                acceptPolicy.offended(endpoint.remoteAddress());   // only a server's peers: a client chose its server
            }
        }
    }

    /** Accepted connections not yet established (their handshake under way), for tests: a scan; any thread. */
    int acceptedConnecting() {
        int n = 0;
        for (Connection c : connections) {
            if (c.server != null && c.state() == ConnectionState.CONNECTING) {
                n++;
            }
        }
        return n;
    }

    /** How many connections this instance's servers hold from {@code source} (the control path: a scan). */
    private int fromSource(SourceAddress source) {
        int n = 0;
        for (Connection c : connections) {
            InetSocketAddress a = c.remoteAddress();
            if (c.server != null && a != null && source.equals(SourceAddress.of(a.getAddress()))) {
                n++;
            }
        }
        return n;
    }

    /** The accept policy's record of failed attempts and offences by source, or null when off (tests read its counts). IO thread 0. */
    SourcePenalties penalties() {
        return acceptPolicy.penalties();
    }

    boolean isClosed() {
        return closed;
    }

    /** A config fits the device, and a shared receive queue it names is this instance's and open. */
    private void checkConfig(ConnectionConfig config) {
        config.validateFor(device.capabilities(), device.name());
        SharedReceiveQueue q = config.sharedReceiveQueue();
        if (q != null && q.rdma() != this) {
            throw new IllegalArgumentException("the config's " + q + " belongs to another Rdma instance (a shared receive"
                    + " queue serves connections of the Rdma that made it)");
        }
        if (q != null && !sharedQueues.contains(q)) {
            throw new IllegalStateException("the config's shared receive queue is closed");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this Rdma instance is closed");
        }
    }

    /**
     * Closes every server, connection and region it made, then its IO threads and the device.
     *
     * @throws IllegalStateException when an IO loop ({@link Builder#ioLoops}) is still driven by
     *                               another thread: stop its driver first (it would poll freed memory)
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        for (IoThread t : io) {
            Thread driver = t.boundDriver();
            if (driver != null && driver != Thread.currentThread() && driver.isAlive()) {
                throw new IllegalStateException("cannot close: " + t.name() + " is still driven by thread \""
                        + driver.getName() + "\"; stop its driver (unbind the IoLoop) first");
            }
        }
        closed = true;
        for (RdmaServer s : List.copyOf(servers)) {
            s.close();
        }
        for (Connection c : List.copyOf(connections)) {
            try {
                c.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing " + c, e);
            }
        }
        for (DatagramEndpoint e : List.copyOf(datagramEndpoints)) {
            try {
                e.close();
            } catch (RuntimeException x) {
                LOG.log(System.Logger.Level.WARNING, "closing " + e, x);
            }
        }
        CompletableFuture<Void> cmClosed = new CompletableFuture<>();
        io[0].execute(() -> {
            cm.close();
            cmClosed.complete(null);
        });
        await(cmClosed, CONTROL_TIMEOUT);
        for (IoThread t : io) {
            t.close();
        }
        for (CompletionChannel ch : channels) {
            ch.close();
        }
        java.util.concurrent.ScheduledExecutorService timer;
        synchronized (this) {
            timer = leaseTimer;
            leaseTimer = null;
        }
        if (timer != null) {
            timer.shutdownNow();
            try {
                if (!timer.awaitTermination(10, TimeUnit.SECONDS)) {
                    LOG.log(System.Logger.Level.WARNING, "the lease timer did not stop within 10 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (leakDetection) {
            reportLeaks();
        }
        for (RegionResources r : List.copyOf(regions)) {
            r.close();
        }
        for (Connection c : List.copyOf(holdingMemory)) {
            c.freeMemory();   // messages still open: their data is gone with the Rdma
        }
        for (SharedReceiveQueue q : List.copyOf(sharedQueues)) {
            q.closeWithRdma();   // after its connections' QPs are gone, before the device's PD
        }
        pool.close();
        device.close();
    }

    /** How an {@link Rdma} is made. Setters return this; {@link #build()} checks and opens. */
    public static final class Builder {
        private String provider = "auto";
        /** A provider instance instead of one found by name: for tests (a fake that they drive). */
        private Provider providerInstance;
        private java.util.function.LongSupplier clock = System::nanoTime;
        private String device;
        private CompletionMode completionMode = CompletionMode.ADAPTIVE;
        private int ioThreads = 1;
        private int ioLoops;
        private boolean singleThreaded;
        private int[] cpus = new int[0];
        private Consumer<DeviceEvent> onDeviceEvent;
        private int maxRemoteAccess = REMOTE_ACCESS;
        private long memoryBudget;
        private boolean leakDetection = Boolean.getBoolean("jrdma.leakDetection");
        private boolean hugePages;
        private int maxConnections = 4096;
        /** 0: the default, 1024 or a quarter of maxConnections if that is more (never more than maxConnections). */
        private int maxConnectionsPerSource;
        private int maxPendingHandshakes = ConnectionLimits.DEFAULTS.maxPendingHandshakes();
        private java.time.Duration handshakeTimeout = java.time.Duration.ofNanos(ConnectionLimits.DEFAULTS.handshakeTimeoutNanos());
        private java.time.Duration idleTimeout = java.time.Duration.ofNanos(ConnectionLimits.DEFAULT_IDLE_TIMEOUT_NANOS);
        private boolean sourcePenalties = true;

        private Builder() {
        }

        /**
         * Whether a source address that keeps failing must wait before its servers look at its next
         * connection request (default: on). Each source may present a wrong or missing auth token
         * {@value SourcePenalties#FREE_AUTH_FAILURES} times, and end
         * {@value SourcePenalties#FREE_OFFENCES} connections by misusing them (naming a key that
         * was never issued, breaking the protocol), free; past that it waits 100 ms, doubling with
         * each further failure up to 10 s, and a request made while it waits is refused unchecked
         * ("too many failed attempts from this address: retry in N ms"). Its record is forgotten 60 s
         * after its last failure. A stale key (a region closed, a lease ended) is no failure. IPv4
         * sources count by address, IPv6 ones by /64; on loopback every local process is one
         * source. Turn it off only for a test that attacks on purpose, such as a fuzzer.
         *
         * @param on false to look at every request whatever its source did before
         * @return this builder
         */
        public Builder sourcePenalties(boolean on) {
            sourcePenalties = on;
            return this;
        }

        /**
         * The most connections this instance's servers hold at once; a client past it is rejected
         * with a reason ("too many connections"). Every connection costs receive buffers and a
         * queue pair: this bounds what peers can make us allocate. Default 4096.
         *
         * @param n the most connections at once
         * @return this builder
         */
        public Builder maxConnections(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxConnections must be at least 1, not " + n);
            }
            maxConnections = n;
            return this;
        }

        /**
         * The most connections this instance's servers hold at once from one source address; a
         * client past it is rejected with a reason ("too many connections from this address"), so
         * that one client cannot take all of {@link #maxConnections}. Every process of one host is
         * one source (all of loopback's clients, for a server on loopback). IPv4 sources count by
         * address, IPv6 ones by /64. Default: 1024, or a quarter of {@link #maxConnections} when
         * that is more (and at most {@code maxConnections}); a value of {@code maxConnections} or
         * more turns it off.
         *
         * @param n the most connections from one address at once
         * @return this builder
         */
        public Builder maxConnectionsPerSource(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxConnectionsPerSource must be at least 1, not " + n);
            }
            maxConnectionsPerSource = n;
            return this;
        }

        /**
         * How many accepted connections may be in their handshake at once: more wait in the
         * kernel's backlog until one finishes or times out (tcp, shm). On verbs, the connections
         * accepted whose client has not sent its RTU (a client whose rdma_cm never reads its
         * CONNECT_RESPONSE holds our QP, CQ and receive buffers): one more drops the oldest of them
         * from the source that has the most. Default 128.
         *
         * @param n the most handshakes in progress at once
         * @return this builder
         */
        public Builder maxPendingHandshakes(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxPendingHandshakes must be at least 1, not " + n);
            }
            maxPendingHandshakes = n;
            return this;
        }

        /**
         * How long an accepted connection's client has for each of its handshake steps before it
         * is dropped: for its HELLO from the TCP accept, and for its last message from this side's
         * answer, so this side's own slowness is not charged to it (tcp, shm); on verbs, for its
         * RTU from our accept (rdma_cm's own REP retries would wait minutes). A peer that connects
         * and says nothing costs a socket (on verbs: a QP) this long. Default 5 s.
         *
         * @param timeout the time, positive
         * @return this builder
         */
        public Builder handshakeTimeout(java.time.Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("handshakeTimeout must be positive, not " + timeout);
            }
            handshakeTimeout = timeout;
            return this;
        }

        /**
         * How long an established connection's peer may send nothing at all before its connection
         * ends (tcp and shm): a peer that is gone without a word, stopped, or not jrdma (a socket
         * that finished the handshake and sits on a place of {@link #maxConnections}). A jrdma
         * peer with nothing to say sends a keep-alive when it has sent nothing for a third of its
         * own idle timeout, at most 15 s; so ends that both keep the default (or any timeout of
         * 45 s and more) never time an idle but living connection out, and shorter timeouts need
         * the same setting on both ends. A peer's one-sided operations on shm, which bypass this
         * side's CPU, keep it alive through its keep-alives too. Verbs: no effect (the NIC's
         * transport finds a dead peer at the next operation; one-sided traffic never reaches the
         * CPU). Default 2 minutes; {@link java.time.Duration#ZERO} turns it off.
         *
         * @param timeout the time, or zero for none
         * @return this builder
         */
        public Builder idleTimeout(java.time.Duration timeout) {
            if (timeout.isNegative()) {
                throw new IllegalArgumentException("idleTimeout must be zero (none) or positive, not " + timeout);
            }
            idleTimeout = timeout;
            return this;
        }

        /**
         * Puts the registered-memory pool in 2 MiB huge pages while the kernel has them reserved
         * (vm.nr_hugepages): fewer TLB misses, and fewer pages for the device to translate. When
         * it has none (or on shm, whose peers map 4 KiB pages) the pool uses normal pages and
         * says so once in the log. Default: off.
         *
         * @param on true to turn it on
         * @return this builder
         */
        public Builder hugePages(boolean on) {
            hugePages = on;
            return this;
        }

        /**
         * Reports regions that are garbage-collected without {@link LocalRegion#close()}, each with
         * a log warning (logger {@code dev.jrdma}) and the stack where it was made. For debugging:
         * it records a stack trace per region. Default: the system property
         * {@code jrdma.leakDetection} ({@code -Djrdma.leakDetection=true}), else off.
         *
         * @param on true to turn it on
         * @return this builder
         */
        public Builder leakDetection(boolean on) {
            leakDetection = on;
            return this;
        }

        /**
         * The registered memory this instance expects to use at most (pool chunks, registered
         * regions): {@link #build()} fails, saying which limit to raise and how, when this process
         * could not pin that much (verbs: RLIMIT_MEMLOCK less what is pinned already, unless it has
         * CAP_IPC_LOCK), rather than a registration failing with ENOMEM later. Default 0: no check.
         *
         * @param bytes the bytes
         * @return this builder
         */
        public Builder memoryBudget(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("memoryBudget must be 0 or more bytes, not " + bytes);
            }
            memoryBudget = bytes;
            return this;
        }

        /**
         * The most a peer may be granted on this instance's memory (async-rdma's access limit):
         * {@link LocalRegion#toRemote()} grants these rights, {@link LocalRegion#toRemote(Access...)}
         * and {@link Rdma#register} refuse more. Default: REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC;
         * none at all is allowed (memory that only this side's operations use).
         *
         * @param rights the most peers may be granted; none: no remote access at all
         * @return this builder
         * @throws IllegalArgumentException for LOCAL_WRITE, which is not a remote right
         */
        public Builder maxRemoteAccess(Access... rights) {
            int bits = Access.bits(rights);
            if ((bits & ~REMOTE_ACCESS) != 0) {
                throw new IllegalArgumentException("maxRemoteAccess takes remote rights (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC), not "
                        + AccessFlags.names(bits & ~REMOTE_ACCESS));
            }
            maxRemoteAccess = bits;
            return this;
        }

        /**
         * "auto" (default), "verbs", "tcp" or "shm".
         *
         * @param name {@code auto}, {@code verbs}, {@code shm} or {@code tcp}
         * @return this builder
         */
        public Builder provider(String name) {
            provider = Objects.requireNonNull(name, "provider");
            return this;
        }

        /** Uses {@code p} itself, not a provider found by name: the seam through which tests drive a fake one. */
        Builder provider(Provider p) {
            providerInstance = Objects.requireNonNull(p, "provider");
            provider = p.name();
            return this;
        }

        /** The time deadlines are measured in (System.nanoTime): a test that moves it sees time-outs at once. */
        Builder clock(java.util.function.LongSupplier nanoClock) {
            clock = Objects.requireNonNull(nanoClock, "clock");
            return this;
        }

        /**
         * The device name, e.g. "rxe0"; default: the first with an active port.
         *
         * @param name the device's name, as {@code jrdma devices} lists it
         * @return this builder
         */
        public Builder device(String name) {
            device = name;
            return this;
        }

        /**
         * How the IO threads wait for completions: POLLING, EVENT or ADAPTIVE (the default).
         *
         * @param mode the mode
         * @return this builder
         */
        public Builder completionMode(CompletionMode mode) {
            completionMode = Objects.requireNonNull(mode, "completionMode");
            return this;
        }

        /**
         * IO threads connections are spread over (default 1: the single-thread IO model), or
         * {@link Rdma#INLINE} (0): none, the application calls {@link Rdma#poll()}.
         *
         * @param n IO threads, or {@link Rdma#INLINE} for none
         * @return this builder
         */
        public Builder ioThreads(int n) {
            if (n < 0 || n > 256) {
                throw new IllegalArgumentException("ioThreads must be in 0..256 (0: Rdma.INLINE), not " + n);
            }
            ioThreads = n;
            return this;
        }

        /**
         * {@code n} IO loops and no IO thread: each loop is driven by one thread of the application
         * ({@link Rdma#ioLoop(int)}: poll, sleep until there is work, be woken), so that another
         * framework's event loops, Netty's in jrdma-netty, are the IO threads themselves and its
         * handlers run where the completions are seen. Connections are spread over the loops
         * ({@link Rdma#connectAsync(InetSocketAddress, ConnectionConfig, IoLoop)} picks one);
         * loop 0 also serves the connection manager, so every loop must be driven. Takes the place
         * of {@link #ioThreads}; not with {@link #singleThreaded} or {@link #cpuAffinity} (the
         * threads are the application's). Default 0: IO threads of its own.
         *
         * @param n IO loops, 1..256
         * @return this builder
         */
        public Builder ioLoops(int n) {
            if (n < 1 || n > 256) {
                throw new IllegalArgumentException("ioLoops must be in 1..256, not " + n);
            }
            ioLoops = n;
            return this;
        }

        /**
         * Single-threaded ({@code true}; needs {@code ioThreads(Rdma.INLINE)}): the thread that
         * calls {@link #build()} is this instance's owner, and the only thread that polls, posts
         * on its connections and closes their messages. Those paths then take no lock and no
         * atomic step (UCX's {@code UCS_THREAD_MODE_SINGLE}); a call to them from another thread
         * throws IllegalStateException naming both threads, rather than race. Regions, connect,
         * listen and close keep their own thread safety, but {@code close} and the blocking calls
         * poll while they wait, so they too belong on the owner. Default false.
         *
         * @param single true for single-threaded use
         * @return this builder
         */
        public Builder singleThreaded(boolean single) {
            singleThreaded = single;
            return this;
        }

        /**
         * Receives the device's asynchronous events (port up/down, fatal QP or device errors), on
         * IO thread 0; every event is also logged. A fatal one has already put its connection in
         * ERROR when the listener hears of it.
         *
         * @param listener told of each change, on the IO thread
         * @return this builder
         */
        public Builder onDeviceEvent(Consumer<DeviceEvent> listener) {
            onDeviceEvent = listener;
            return this;
        }

        /**
         * Pins IO thread {@code i} to CPU {@code cpus[i % cpus.length]} (sched_setaffinity);
         * {@link #build()} fails naming the CPU when the kernel refuses it.
         *
         * @param cpus the CPUs, 0 to 1023; IO thread i is pinned to {@code cpus[i % cpus.length]}
         * @return this builder
         */
        public Builder cpuAffinity(int... cpus) {
            for (int c : cpus) {
                if (c < 0 || c >= 1024) {
                    throw new IllegalArgumentException("cpuAffinity: CPU " + c + " is outside 0..1023");
                }
            }
            this.cpus = cpus.clone();
            return this;
        }

        /**
         * The provider asked for, opened; for {@code auto}: verbs when it has a device that opens,
         * else tcp, saying why verbs was passed over in {@link Rdma#providerChoice()} (and the log, at DEBUG).
         */
        Chosen chooseAndOpen() {
            if (providerInstance != null) {
                return new Chosen(providerInstance, providerInstance.open(device), provider + ", given");
            }
            List<Provider> all = Providers.all();
            if (provider.equals("auto")) {
                String whyNotVerbs = "it is not in this build";
                for (Provider p : all) {
                    if (p.name().equals("verbs")) {
                        ProviderUnavailableException cause = p.unavailabilityCause();
                        if (cause == null) {
                            try {
                                return new Chosen(p, p.open(device), "auto: verbs, device up");
                            } catch (RdmaException e) {
                                whyNotVerbs = e.getMessage();
                            }
                        } else {
                            whyNotVerbs = cause.getMessage();
                        }
                    }
                }
                // shm is tcp plus direct access to peers of this host, so it serves every peer.
                for (String software : List.of("shm", "tcp")) {
                    for (Provider p : all) {
                        if (p.name().equals(software) && p.isAvailable()) {
                            String reason = "auto: " + software + (software.equals("shm")
                                    ? " (direct shared memory to peers on this host, tcp to the others)" : "")
                                    + ", because verbs cannot be used here: " + whyNotVerbs;
                            LOG.log(System.Logger.Level.DEBUG, "jrdma chose the {0}", reason);
                            return new Chosen(p, p.open(null), reason);
                        }
                    }
                }
                throw new ProviderUnavailableException("auto", "no provider can run here; verbs: " + whyNotVerbs);
            }
            List<String> names = new ArrayList<>();
            for (Provider p : all) {
                names.add(p.name());
                if (p.name().equals(provider)) {
                    ProviderUnavailableException cause = p.unavailabilityCause();
                    if (cause != null) {
                        throw cause;
                    }
                    return new Chosen(p, p.open(device), provider + ", as asked");
                }
            }
            throw new ProviderUnavailableException(provider, "no such provider; providers here: " + names);
        }

        /**
         * Opens the provider and device and starts the IO threads.
         *
         * @return the open {@code Rdma}
         */
        public Rdma build() {
            if (ioLoops > 0 && (singleThreaded || cpus.length > 0)) {
                throw new IllegalArgumentException("ioLoops(" + ioLoops + ") is not for " + (singleThreaded ? "singleThreaded"
                        : "cpuAffinity") + ": the application's threads drive the loops (pin those threads instead)");
            }
            if (singleThreaded && ioThreads != INLINE) {
                throw new IllegalArgumentException("singleThreaded needs ioThreads(Rdma.INLINE): with IO threads of its own "
                        + "(ioThreads " + ioThreads + "), completions run on them, not on one owner thread");
            }
            return new Rdma(this);
        }
    }
}
