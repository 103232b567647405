package dev.jrdma;

import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.engine.admission.AcceptPolicy;
import dev.jrdma.engine.admission.SourcePenalties;
import dev.jrdma.engine.io.IoPlan;
import dev.jrdma.engine.io.IoThreads;
import dev.jrdma.engine.region.LeaseTimer;
import dev.jrdma.engine.select.ProviderSelection;
import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.memory.MemoryRegistrar;
import dev.jrdma.memory.PooledBlock;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.Provider;
import dev.jrdma.spi.Providers;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

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
 *
 * <p>A facade over the engine: the provider is chosen by {@code ProviderSelection}, the IO
 * threads are {@code IoThreads}, what it made is registered in {@code LiveObjects} (which owns
 * the close order), memory is registered by {@code MemoryRegistrar}, leases end on a
 * {@code LeaseTimer}, the steps through the connection manager are {@code ControlSteps}, and
 * the connection manager's and the device's events go to {@code CmEventDispatch} and
 * {@code DeviceEventDispatch}.
 */
public final class Rdma implements AutoCloseable {
    /**
     * {@code ioThreads(INLINE)}: no IO thread; the application drives progress with
     * {@link #poll()} (and the library's blocking calls poll while they wait).
     */
    public static final int INLINE = 0;
    /**
     * The kernel's accept queue for each listener (capped by net.core.somaxconn): a connection
     * waiting there costs kernel memory only, and one that finds it full has its SYN dropped and
     * waits a second for the retry. Deep, so that a flood of sockets does not push honest clients
     * out before they are looked at (the connection manager takes them quickly and bounds itself).
     */
    static final int LISTEN_BACKLOG = 4096;

    private final Provider provider;
    private final Device device;
    private final String providerChoice;
    private final IoThreads io;
    /** Driven instances ({@link Builder#ioLoops}): the public side of each IO thread; else empty. */
    private final IoLoop[] loops;
    private final LiveObjects live;
    /** Listen, connect, open a datagram endpoint: the steps through the connection manager. */
    private final ControlSteps control;
    private final MemoryRegistrar memory;
    private final LeaseTimer leases;
    /** Time for deadlines that tests may need to move (an emulated atomic's): System.nanoTime unless a test set it. */
    private final LongSupplier clock;

    private Rdma(Builder b) {
        ProviderSelection chosen = b.chooseAndOpen();
        this.provider = chosen.provider();
        this.device = chosen.device();
        this.providerChoice = chosen.reason();
        this.clock = b.clock;
        this.live = new LiveObjects(b.leakDetection);
        if (b.memoryBudget > 0) {
            try {
                device.checkMemoryBudget(b.memoryBudget);
            } catch (RuntimeException e) {
                device.close();
                throw e;
            }
        }
        this.memory = new MemoryRegistrar(device, b.hugePages, b.maxRemoteAccess, live::checkOpen);
        this.leases = new LeaseTimer(device.name(), live::checkOpen);
        try {
            this.io = IoThreads.open(device, b.ioPlan(), b.connectionLimits());
        } catch (RuntimeException e) {
            device.close();
            throw e;
        }
        this.control = new ControlSteps(this, live, io, device);
        try {
            this.loops = new IoLoop[b.ioLoops];
            for (int i = 0; i < loops.length; i++) {
                loops[i] = new IoLoop(this, io.get(i), i);
            }
            io.serveControl(device, new CmEventDispatch(this, live, io, device, b.acceptPolicy()),
                    new DeviceEventDispatch(live, device, b.onDeviceEvent));
        } catch (RuntimeException e) {
            io.closeAfterFailedStart();
            device.close();
            throw e;
        }
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
        ProviderSelection c = builder().chooseAndOpen();
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
        return io.control().poll();
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
                    + (io.isInline() ? "it is INLINE (poll())" : "its IO threads drive it"));
        }
        Objects.checkIndex(index, loops.length);
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
        return io.threadIds();
    }

    /**
     * {@return whether the calling thread is one of this instance's IO threads: callbacks run there, and a
     * callback must not block it (close from one returns without waiting for the teardown)}
     */
    public boolean isIoThread() {
        return io.isIoThread();
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
        return pooled(memory.allocate("allocate", size, true));
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
        return pooled(memory.allocate("allocateUninitialized", size, false));
    }

    private LocalRegion pooled(PooledBlock block) {
        return live.track(new LocalRegion(block.segment(), block.registration(), block, this, true));
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
        return registered(segment, memory.register(segment, Access.bits(access)), "register");
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
        return registered(segment, memory.registerOnDemand(segment, Access.bits(access)), "registerOnDemand");
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
        MemoryRegistration r = memory.registerAddressSpaceOnDemand();
        return registered(r.memory(), r, "registerAddressSpaceOnDemand");
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
        MemoryRegistration r = memory.registerPhysical(physicalAddress, length, Access.bits(access));
        return registered(r.memory(), r, "registerPhysical");
    }

    /** A region of {@code segment} over {@code r}, which {@code what} registered: tracked, and its RegionRegistered event recorded. */
    private LocalRegion registered(MemorySegment segment, MemoryRegistration r, String what) {
        LocalRegion region = live.track(new LocalRegion(segment, r, null, this, false));
        memory.registered(region.address(), region.length(), region.resources().registration, what);
        return region;
    }

    /** {@return whether the pool got huge pages ({@link Builder#hugePages}) for any of its memory} */
    public boolean hugePagesInUse() {
        return memory.hugePagesInUse();
    }

    /**
     * Logs each region that was garbage-collected without {@link LocalRegion#close()}; returns the
     * stack of each it reported (for tests: {@link LiveObjects#reportLeaks}).
     */
    List<Throwable> reportLeaks() {
        return live.reportLeaks();
    }

    // ---------------------------------------------------------------- shared receive queues, datagrams

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
        live.checkOpen();
        // A device without them refuses in Device.createSrq, naming itself.
        SharedReceiveQueue q = new SharedReceiveQueue(this, device, buffers, bufferSize, capacity);
        live.add(q);
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
        return control.datagramEndpoint(bind, receiveBuffers, sendDepth, maxSenders);
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
        return control.listen(address, config, onAccept);
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
        return io.await(connectAsync(address, config), config.timeout().plusSeconds(5));
    }

    /**
     * Starts connecting; the future completes when the connection is established, or fails with why not.
     *
     * @param address the server's address
     * @param config how the connection is set up
     * @return a future of the connection, once established; exceptionally with why it could not be
     */
    public CompletableFuture<Connection> connectAsync(InetSocketAddress address, ConnectionConfig config) {
        return control.connect(address, config, null, null);
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
        return control.connect(address, config, null, loop.io());
    }

    /** Accepted connections not yet established (their handshake under way), for tests: a scan; any thread. */
    int acceptedConnecting() {
        return live.acceptedConnecting();
    }

    // ---------------------------------------------------------------- the engine, for the API's classes

    /** {@return the IO threads: pick one, find its channel, run a control step on IO thread 0, await one} */
    IoThreads io() {
        return io;
    }

    /** {@return the control steps: listen, connect, close a server, open a datagram endpoint} */
    ControlSteps control() {
        return control;
    }

    /** {@return the registry of what this instance made (connections, regions, queues, endpoints)} */
    LiveObjects live() {
        return live;
    }

    /** {@return what registers memory here, and the remote rights a region may grant} */
    MemoryRegistrar memory() {
        return memory;
    }

    /** {@return the timer that ends leases} */
    LeaseTimer leases() {
        return leases;
    }

    Device device() {
        return device;
    }

    LongSupplier clock() {
        return clock;
    }

    boolean isClosed() {
        return live.isClosed();
    }

    /**
     * Closes every server, connection and region it made, then its IO threads and the device.
     *
     * @throws IllegalStateException when an IO loop ({@link Builder#ioLoops}) is still driven by
     *                               another thread: stop its driver first (it would poll freed memory)
     */
    @Override
    public void close() {
        live.close(io, leases, memory, device);
    }

    /** How an {@link Rdma} is made. Setters return this; {@link #build()} checks and opens. */
    public static final class Builder {
        private String provider = "auto";
        /** A provider instance instead of one found by name: for tests (a fake that they drive). */
        private Provider providerInstance;
        private LongSupplier clock = System::nanoTime;
        private String device;
        private CompletionMode completionMode = CompletionMode.ADAPTIVE;
        private IdleStrategy idleStrategy;   // null: the completion mode's
        private int ioThreads = 1;
        private int ioLoops;
        private boolean singleThreaded;
        private int[] cpus = new int[0];
        private Consumer<DeviceEvent> onDeviceEvent;
        private int maxRemoteAccess = AccessFlags.REMOTE_MASK;
        private long memoryBudget;
        private boolean leakDetection = Boolean.getBoolean("jrdma.leakDetection");
        private boolean hugePages;
        private int maxConnections = 4096;
        /** 0: the default, 1024 or a quarter of maxConnections if that is more (never more than maxConnections). */
        private int maxConnectionsPerSource;
        private int maxPendingHandshakes = ConnectionLimits.DEFAULTS.maxPendingHandshakes();
        private Duration handshakeTimeout = Duration.ofNanos(ConnectionLimits.DEFAULTS.handshakeTimeoutNanos());
        private Duration idleTimeout = Duration.ofNanos(ConnectionLimits.DEFAULT_IDLE_TIMEOUT_NANOS);
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
        public Builder handshakeTimeout(Duration timeout) {
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
        public Builder idleTimeout(Duration timeout) {
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
            if ((bits & ~AccessFlags.REMOTE_MASK) != 0) {
                throw new IllegalArgumentException("maxRemoteAccess takes remote rights (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC), not "
                        + AccessFlags.names(bits & ~AccessFlags.REMOTE_MASK));
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
        Builder clock(LongSupplier nanoClock) {
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
         * What the IO threads do after a pass that found no work, instead of what the completion mode
         * implies (see {@link IdleStrategy}); {@link #build()} refuses it with INLINE or IO loops.
         *
         * @param strategy the strategy, or null for the completion mode's
         * @return this builder
         */
        public Builder idleStrategy(IdleStrategy strategy) {
            idleStrategy = strategy;
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

        /** The provider asked for, opened (for {@code auto}, see {@link ProviderSelection#open}). */
        ProviderSelection chooseAndOpen() {
            return ProviderSelection.open(provider, providerInstance, device);
        }

        /** The IO threads (or loops) asked for. */
        IoPlan ioPlan() {
            var idle = IdleStrategy.forIoThreads(idleStrategy, completionMode, ioThreads == INLINE, ioLoops);
            boolean pollingOnly = ioLoops == 0 && (ioThreads == INLINE || !idle.sleeps());   // nobody arms or sleeps
            return new IoPlan(ioThreads, ioLoops, singleThreaded, idle, pollingOnly, cpus);
        }

        /** The connection manager's limits on handshakes and idle connections. */
        ConnectionLimits connectionLimits() {
            return new ConnectionLimits(maxPendingHandshakes, handshakeTimeout.toNanos(), idleTimeout.toNanos());
        }

        /** The accept policy of the servers: the source penalties, maxConnections, maxConnectionsPerSource. */
        AcceptPolicy acceptPolicy() {
            return AcceptPolicy.of(sourcePenalties, maxConnections, maxConnectionsPerSource);
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
            IdleStrategy.forIoThreads(idleStrategy, completionMode, ioThreads == INLINE, ioLoops);   // refused before anything opens
            if (singleThreaded && ioThreads != INLINE) {
                throw new IllegalArgumentException("singleThreaded needs ioThreads(Rdma.INLINE): with IO threads of its own "
                        + "(ioThreads " + ioThreads + "), completions run on them, not on one owner thread");
            }
            return new Rdma(this);
        }
    }
}
