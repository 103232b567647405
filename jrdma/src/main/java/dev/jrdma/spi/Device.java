package dev.jrdma.spi;

import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import java.lang.foreign.MemorySegment;

/**
 * An opened device with its protection domain: what memory registrations, completion queues
 * and connections are made on. One per {@code Rdma} instance. Thread-safe for the control
 * calls here; the objects it makes say their own rules.
 */
public interface Device extends AutoCloseable {
    /** The device name, e.g. {@code rxe0} or {@code mlx5_0}. */
    String name();

    DeviceCapabilities capabilities();

    /**
     * Registers {@code memory} with {@code access} ({@link AccessFlags} bits).
     *
     * @throws dev.jrdma.exceptions.NativeRdmaException when the device refuses (the errno says why)
     */
    MemoryRegistration register(MemorySegment memory, int access);

    /**
     * Refuses a budget of {@code bytes} to register that this process could not pin (verbs:
     * RLIMIT_MEMLOCK), saying what to raise; a device that pins nothing accepts any.
     */
    default void checkMemoryBudget(long bytes) {
    }

    /**
     * Registers {@code memory} for the peer of {@code qp} alone: a request with its key that
     * comes on any other queue pair is refused as if the key named nothing.
     *
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException when the device cannot limit
     *         a key to one queue pair
     */
    default MemoryRegistration registerFor(QueuePair qp, MemorySegment memory, int access) {
        throw new UnsupportedCapabilityException("a registration for one connection", name(),
                "this provider cannot limit a key to one queue pair");
    }

    /**
     * Registers {@code memory} for on-demand paging (explicit ODP): the pages are not pinned,
     * the device faults them in as it touches them.
     *
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException when the device has no ODP
     */
    default MemoryRegistration registerOnDemand(MemorySegment memory, int access) {
        throw new UnsupportedCapabilityException("on-demand paging", name(),
                "a software device registers without pinning anyway: use register");
    }

    /**
     * One on-demand-paging registration for the whole address space (implicit ODP); its
     * {@link MemoryRegistration#memory()} spans every address.
     *
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException when the device has no implicit ODP
     */
    default MemoryRegistration registerImplicitOnDemand(int access) {
        throw new UnsupportedCapabilityException("implicit on-demand paging", name(), null);
    }

    /**
     * Registers physical memory by its physical address (SnowRDMA's PA-MR).
     *
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException on every device jrdma knows: rdma-core
     *         has no user-space call for it
     */
    default MemoryRegistration registerPhysical(long physicalAddress, long length, int access) {
        throw new UnsupportedCapabilityException("physical-address memory regions", name(),
                "rdma-core has no user-space verbs call that registers physical addresses (mlx5 offers them to kernel users only)");
    }

    /**
     * {@code size} bytes of zeroed memory that same-host peers can reach directly, for
     * {@code Rdma.allocate}; null when this device has no such memory (then ordinary memory is used).
     */
    default ShareableMemory allocateShareable(long size) {
        return null;
    }

    /** Whether its queue pairs take {@link QueuePair#WR_FLUSH} (else a flush is a read after the writes). */
    default boolean flushes() {
        return false;
    }

    /**
     * Creates a shared receive queue of at least {@code capacity} receives (one scatter entry
     * each) on this device's protection domain; {@code onLimit} runs when an armed limit is
     * crossed ({@link Srq#armLimit}). A device without shared receive queues
     * throws {@link UnsupportedCapabilityException}.
     */
    default Srq createSrq(int capacity, Runnable onLimit) {
        throw new UnsupportedCapabilityException("shared receive queues", name(), null);
    }

    /**
     * A type 2 memory window on this device's protection domain, unbound: bound on one queue pair
     * with {@link QueuePair#WR_BIND_MW}, it gives that queue pair's peer alone a key to a range of a
     * registration made with {@link AccessFlags#MW_BIND}. A device without them throws
     * {@link UnsupportedCapabilityException}.
     */
    default MemoryWindow allocateWindow() {
        throw new UnsupportedCapabilityException("memory windows (type 2)", name(), null);
    }

    /** Whether {@link #allocateWindow()} works here (then registrations for peers carry {@link AccessFlags#MW_BIND}). */
    default boolean bindsWindows() {
        return false;
    }

    /** A completion channel: one fd that reports events of every CQ made with it. */
    CompletionChannel createCompletionChannel();

    /** A completion queue of at least {@code depth} entries; {@code channel} may be null (polling only). */
    CompletionQueue createCompletionQueue(int depth, CompletionChannel channel);

    /**
     * The most entries of a completion queue that the queue pairs of one IO thread share (verbs:
     * the device's {@code max_cqe}): one {@link CompletionQueue#pollShared} a pass serves them
     * all, where polling a queue per connection costs a downcall each. 0, the default: every
     * connection has a queue of its own (the software providers, whose queues rest while idle).
     */
    default int sharedCompletionQueueDepth() {
        return 0;
    }

    /** A connection manager: listen, connect, accept, with its events on one fd. */
    ConnectionManager createConnectionManager();

    /**
     * A connection manager that holds peers to {@code limits} before they are connected (verbs:
     * accepted connections awaiting their RTU; the software providers: handshakes under way).
     */
    default ConnectionManager createConnectionManager(ConnectionLimits limits) {
        return createConnectionManager();
    }

    /**
     * An fd that becomes readable when the device has asynchronous events to read with
     * {@link #pollEvents}, or -1 when it has no such fd.
     */
    int eventFd();

    /** Sets who receives this device's asynchronous events (null: they are only logged). */
    void onEvents(DeviceEventHandler handler);

    /** Reads the device's pending asynchronous events, without blocking, into the handler; returns how many. */
    int pollEvents();

    /** Frees the protection domain; everything made on the device must be closed first. */
    @Override
    void close();
}
