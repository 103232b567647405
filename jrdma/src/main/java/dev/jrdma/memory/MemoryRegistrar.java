package dev.jrdma.memory;

import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.QueuePair;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * What one {@code Rdma} registers, and the rules for it: blocks of its pool (registered for
 * local access), the application's own memory (once per range and access, through a
 * {@link RegistrationCache}), on-demand and physical registrations, and the exposures that give
 * peers their rights, never beyond {@code maxRemoteAccess}. Each call first checks that the
 * {@code Rdma} is open. The regions made of what it returns are the API's.
 *
 * <p>Threads: any (the pool, the cache and the device are thread-safe).
 */
public final class MemoryRegistrar implements AutoCloseable {
    private static final int REMOTE_ACCESS = AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC;
    private final Device device;
    /** Registered memory for {@code allocate}: chunks registered for local access; peers get exposures. */
    private final RegisteredMemoryPool pool;
    /** The application's own memory, registered once per range and access. */
    private final RegistrationCache registrations;
    private final int maxRemoteAccess;
    /** Throws when the {@code Rdma} is closed. */
    private final Runnable checkOpen;

    /**
     * @param device          the open device
     * @param hugePages       whether the pool tries huge pages
     * @param maxRemoteAccess the most a peer may be granted, as access bits
     * @param checkOpen       throws when the {@code Rdma} is closed
     */
    public MemoryRegistrar(Device device, boolean hugePages, int maxRemoteAccess, Runnable checkOpen) {
        this.device = device;
        this.maxRemoteAccess = maxRemoteAccess;
        this.checkOpen = checkOpen;
        this.pool = new RegisteredMemoryPool(device, AccessFlags.LOCAL_WRITE, hugePages);
        this.registrations = new RegistrationCache(device);
    }

    /** {@return {@code size} bytes lent by the pool, zeroed if asked} {@code op} names the call in the error. */
    public PooledBlock allocate(String op, long size, boolean zero) {
        checkOpen.run();
        if (size <= 0) {
            throw new IllegalArgumentException(op + ": size must be positive, not " + size);
        }
        return pool.allocate(size, zero);
    }

    /** {@return the registration of the application's {@code segment} with {@code access}, shared with any of the same range and access} */
    public MemoryRegistration register(MemorySegment segment, int access) {
        return registrations.register(segment, checkRegistrable("register", segment, access));
    }

    /** {@return an on-demand-paging registration of {@code segment} (explicit ODP)} */
    public MemoryRegistration registerOnDemand(MemorySegment segment, int access) {
        return device.registerOnDemand(segment, checkRegistrable("registerOnDemand", segment, access));
    }

    /** {@return the on-demand-paging registration of the whole address space (implicit ODP), for local use} */
    public MemoryRegistration registerAddressSpaceOnDemand() {
        checkOpen.run();
        return device.registerImplicitOnDemand(AccessFlags.LOCAL_WRITE);
    }

    /** {@return a registration of {@code length} bytes at {@code physicalAddress}, where the device allows it} */
    public MemoryRegistration registerPhysical(long physicalAddress, long length, int access) {
        checkOpen.run();
        if (length <= 0) {
            throw new IllegalArgumentException("registerPhysical: length must be positive, not " + length);
        }
        return device.registerPhysical(physicalAddress, length, access);
    }

    /** Records the RegionRegistered event of a region that {@code what} registered. */
    public void registered(long address, long length, MemoryRegistration registration, String what) {
        JrdmaEvents.regionRegistered(address, length, AccessFlags.names(registration.access()), what, device.name());
    }

    /** {@return a registration of {@code segment} for peers (a pooled region's exposure)} */
    public MemoryRegistration exposure(MemorySegment segment, int access) {
        checkOpen.run();
        return device.register(segment, access);
    }

    /** {@return a registration of {@code segment} that only the peer of {@code qp} may use} */
    public MemoryRegistration exposureFor(QueuePair qp, MemorySegment segment, int access) {
        checkOpen.run();
        return device.registerFor(qp, segment, access);
    }

    /** {@return the remote rights a region may grant, as access bits} */
    public int maxRemoteAccess() {
        return maxRemoteAccess;
    }

    /** {@return whether the pool got huge pages for any of its memory} */
    public boolean hugePagesInUse() {
        return pool.hugePagesInUse();
    }

    /** The checks of {@code register}; returns the access bits. */
    private int checkRegistrable(String op, MemorySegment segment, int bits) {
        checkOpen.run();
        Objects.requireNonNull(segment, "segment");
        if (!segment.isNative()) {
            throw new IllegalArgumentException(op + ": only native memory can be registered (an Arena's, or a mapped file's), not a heap segment");
        }
        if ((bits & (AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0 && (bits & AccessFlags.LOCAL_WRITE) == 0) {
            throw new IllegalArgumentException(op + ": REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (a verbs rule)");
        }
        int beyond = bits & REMOTE_ACCESS & ~maxRemoteAccess;
        if (beyond != 0) {
            throw new IllegalArgumentException(op + ": " + AccessFlags.names(beyond)
                    + " is beyond what this Rdma lets peers have (maxRemoteAccess " + AccessFlags.names(maxRemoteAccess) + ")");
        }
        return bits;
    }

    /** Closes the pool (after every region that uses it). */
    @Override
    public void close() {
        pool.close();
    }
}
