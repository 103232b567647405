package dev.jrdma;

import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;

/**
 * Registered memory of this process: the source or target of operations, and, through
 * {@link #toRemote()}, what peers may access.
 *
 * <p>Memory from {@link Rdma#allocate} is lent by the registered-memory pool: its chunk's
 * registration serves local access only, and the first {@link #toRemote} registers just this
 * region for the remote rights given (an exposure). Closing the region drops its exposures, so
 * a peer's later operation with their rkeys fails with {@code RemoteAccessException}, and gives
 * the memory back to the pool once no peer can reach it (shm: once each peer that mapped it
 * said it let go). Memory from {@link Rdma#register} keeps its own registration, which closing
 * drops.
 *
 * <p>A slice's {@link #toRemote} exposes exactly the slice (its own key, on verbs a registration
 * of the range): a peer given it reaches nothing of the parent outside it.
 *
 * <p>Slices share their parent's registration and never outlive it: once the
 * parent is closed, a slice (or the parent) refuses {@link #segment}, {@link #slice},
 * {@link #toRemote} and every operation, with an exception saying so.
 *
 * <p><b>Closing while the device works on it is safe</b> (async-rdma's cancel safety): an
 * operation already posted with this region as its local buffer (a send's or write's source, a
 * read's target) holds the memory and its registration until it completes or is flushed, so the
 * device never reads or writes the next owner's block. The close itself returns at once; the
 * memory goes back when the last such operation ends. Peers lose access at the close. A
 * {@code MemorySegment} taken from {@link #segment} before the close is not made unusable by it
 * (the pool's memory stays mapped): code that keeps one past the close reads and writes the next
 * region lent from that block. The pool's own close (with the {@code Rdma}) does make them unusable.
 */
public final class LocalRegion implements AutoCloseable {
    private static final int REMOTE_MASK = AccessFlags.REMOTE_MASK;

    private final MemorySegment segment;
    private final MemoryRegistration registration;
    private final LocalRegion parent;
    /** Shared by the root and its slices. */
    private final RegionResources resources;
    private final Rdma rdma;
    private final boolean pooled;
    private volatile boolean directWriteToPmem;

    LocalRegion(MemorySegment segment, MemoryRegistration registration, AutoCloseable owner, Rdma rdma, boolean pooled) {
        this.segment = segment;
        this.registration = registration;
        this.parent = null;
        this.rdma = rdma;
        this.pooled = pooled;
        this.resources = new RegionResources(segment, registration, owner, rdma, pooled);
    }

    private LocalRegion(MemorySegment segment, LocalRegion parent) {
        this.segment = segment;
        this.registration = parent.registration;
        this.parent = parent;
        this.rdma = parent.rdma;
        this.pooled = parent.pooled;
        this.resources = parent.resources;
    }

    /** What Rdma tracks of it (a root's; a slice shares its parent's). */
    RegionResources resources() {
        return resources;
    }

    /**
     * The memory, to read and write from Java.
     *
     * @return the memory
     * @throws IllegalStateException when the region (or its parent) is closed
     */
    public MemorySegment segment() {
        checkOpen("segment");
        return segment;
    }

    /** {@return the virtual address of the region's first byte in this process (what a verbs sge carries)} */
    public long address() {
        return segment.address();
    }

    /** {@return the region's length in bytes} */
    public long length() {
        return segment.byteSize();
    }

    /** {@return the local key of the registration the region lies in (a verbs sge's lkey)} */
    public int lkey() {
        return registration.lkey();
    }

    /** {@return the rkey peers reach this region with, with the default rights ({@link #toRemote()}'s)} */
    public int rkey() {
        return toRemote().rkey();
    }

    boolean allows(int accessBit) {
        return (registration.access() & accessBit) != 0;
    }

    /**
     * {@code length} bytes at {@code offset}, sharing this registration.
     *
     * @param offset where the slice starts, from the start of this region
     * @param length the slice's length in bytes
     * @return the slice: the same registration, a window of this region
     * @throws IndexOutOfBoundsException when the range is not inside this region
     * @throws IllegalStateException when the region is closed
     */
    public LocalRegion slice(long offset, long length) {
        checkOpen("slice");
        Objects.checkFromIndexSize(offset, length, segment.byteSize());
        return new LocalRegion(segment.asSlice(offset, length), root());
    }

    private LocalRegion root() {
        return parent == null ? this : parent;
    }

    boolean isClosed() {
        return resources.isClosed();
    }

    private void checkOpen(String what) {
        if (resources.isClosed()) {
            throw new IllegalStateException(what + ": this region is closed" + (parent != null ? " (its parent was closed)" : "")
                    + ": " + this);
        }
    }

    /**
     * {@return what a peer needs to access this region: address, length, rkey and the access granted:
     * read, write and atomics, as far as this {@code Rdma}'s {@link Rdma.Builder#maxRemoteAccess
     * maxRemoteAccess} allows (for registered memory: what it was registered with)}
     */
    public RemoteRegion toRemote() {
        checkOpen("toRemote");
        return toRemoteWith(defaultRights());
    }

    /**
     * This region for peers with exactly {@code rights} (REMOTE_READ, REMOTE_WRITE,
     * REMOTE_ATOMIC): a peer's operation that needs more fails at this side's device with
     * {@code RemoteAccessException}, and before posting at a jrdma peer.
     *
     * @param rights the access the peer gets (only what the region has); none: what {@link #toRemote()} grants
     * @return the descriptor of this region for a peer
     * @throws IllegalArgumentException when a right is not remote, is beyond
     *         {@link Rdma.Builder#maxRemoteAccess maxRemoteAccess}, or (registered memory) was not registered
     */
    public RemoteRegion toRemote(Access... rights) {
        checkOpen("toRemote");
        return toRemoteWith(rightsBits("toRemote", rights));
    }

    /**
     * This region for peers with {@code rights} (none given: {@link #toRemote()}'s) for
     * {@code duration} (async-rdma's leases): a registration of its own, dropped when the lease
     * ends, so a peer's later operation with it fails with {@code RemoteAccessException} at
     * this side's device, and before posting at a jrdma peer (the descriptor carries the end).
     * A peer that vanished cannot keep the memory reachable past it. Closing the region ends
     * its leases too. A lease for one connection's peer is {@link #leaseFor}, which on verbs binds
     * a memory window instead of registering.
     *
     * @param duration how long the lease lasts
     * @param rights the access the peer gets (only what the region has); none: what {@link #toRemote()} grants
     * @return the lease's descriptor for a peer
     * @throws IllegalArgumentException for a duration that is not positive or over 292 years, or rights as for {@link
     *     #toRemote(Access...)}
     */
    public RemoteRegion lease(Duration duration, Access... rights) {
        checkOpen("lease");
        Objects.requireNonNull(duration, "duration");
        checkLeaseDuration("lease", duration);
        int bits = rights.length == 0 ? defaultRights() : rightsBits("lease", rights);
        long end = System.currentTimeMillis() + Math.max(1, duration.toMillis());
        MemoryRegistration r = resources.newLease(segment, bits);
        RegionResources res = resources;
        long millis = duration.toMillis();
        rdma.leases().schedule(duration, () -> {
            res.endLease(r);
            JrdmaEvents.leaseEnded(r.memory().address(), r.memory().byteSize(), r.rkey(), millis);
        });
        return new RemoteRegion(segment.address(), segment.byteSize(), r.rkey(),
                bits | (root().directWriteToPmem ? RemoteRegion.DIRECT_WRITE_TO_PMEM : 0), end);
    }

    /**
     * This region for the peer of {@code connection} alone, with {@code rights} (none given:
     * {@link #toRemote()}'s): a registration of its own whose key works only on that connection.
     * Any other peer that holds the descriptor gets {@code RemoteAccessException}, as for a key
     * that names nothing (it learns no more than that). The exposure ends when the connection
     * ends or this region closes, whichever comes first.
     *
     * <p>tcp and shm scope the key themselves. On verbs it is a type 2B memory window bound on
     * the connection's queue pair over this region's registration (the device checks that the
     * key comes on that queue pair); closing the region, or the connection's end, deallocates the
     * window, which revokes the key at once. The call waits for the bind, except on an IO thread
     * (in a callback), where it returns once the bind is posted: a descriptor sent on this
     * connection after it reaches the peer after the bind took effect (RC keeps the send
     * queue's order). A device without type 2B windows throws {@code UnsupportedCapabilityException}.
     *
     * @param connection the connection
     * @param rights the access the peer gets (only what the region has); none: what {@link #toRemote()} grants
     * @return the descriptor, good for that connection's peer only
     * @throws IllegalArgumentException for a connection of another {@code Rdma}, or rights as for
     *         {@link #toRemote(Access...)}
     * @throws dev.jrdma.exceptions.ConnectionClosedException when the connection is not established
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException where the provider cannot limit a key to one
     *     connection
     * @throws IllegalStateException when the region is closed
     */
    public RemoteRegion toRemoteFor(Connection connection, Access... rights) {
        checkOpen("toRemoteFor");
        Objects.requireNonNull(connection, "toRemoteFor: the connection");
        if (connection.rdma() != rdma) {
            throw new IllegalArgumentException("toRemoteFor: " + connection + " belongs to another Rdma than this region");
        }
        int bits = rights.length == 0 ? defaultRights() : rightsBits("toRemoteFor", rights);
        MemoryRegistration r = resources.newScoped("toRemoteFor", segment, bits, connection);
        int granted = bits | (root().directWriteToPmem ? RemoteRegion.DIRECT_WRITE_TO_PMEM : 0);
        return new RemoteRegion(segment.address(), segment.byteSize(), r.rkey(), granted);
    }

    /**
     * A lease for the peer of {@code connection} alone: {@link #toRemoteFor(Connection, Access...)}'s
     * exposure that also ends after {@code duration} (the descriptor carries the end, as a {@link
     * #lease lease}'s does), or with the connection or this region, whichever comes first. On verbs
     * it is a memory window (type 2B) bound on the connection's queue pair and deallocated when the
     * lease ends: no registration is made for it, so a short lease of a slice of a large region
     * costs a bind and an invalidation, not a registration of its pages.
     *
     * @param connection the connection whose peer gets the lease
     * @param duration how long the lease lasts
     * @param rights the access the peer gets (only what the region has); none: what {@link #toRemote()} grants
     * @return the lease's descriptor, good for that connection's peer only
     * @throws IllegalArgumentException for a duration that is not positive or over 292 years, a connection of another
     *         {@code Rdma}, or rights as for {@link #toRemote(Access...)}
     * @throws dev.jrdma.exceptions.ConnectionClosedException when the connection is not established
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException where the provider cannot limit a key to one
     *     connection
     * @throws IllegalStateException when the region is closed
     */
    public RemoteRegion leaseFor(Connection connection, Duration duration, Access... rights) {
        checkOpen("leaseFor");
        Objects.requireNonNull(connection, "leaseFor: the connection");
        Objects.requireNonNull(duration, "leaseFor: the duration");
        if (connection.rdma() != rdma) {
            throw new IllegalArgumentException("leaseFor: " + connection + " belongs to another Rdma than this region");
        }
        checkLeaseDuration("leaseFor", duration);
        int bits = rights.length == 0 ? defaultRights() : rightsBits("leaseFor", rights);
        long end = System.currentTimeMillis() + Math.max(1, duration.toMillis());
        MemoryRegistration r = resources.newScoped("leaseFor", segment, bits, connection);
        RegionResources res = resources;
        long millis = duration.toMillis();
        try {
            rdma.leases().schedule(duration, () -> {
                if (res.endScoped(r)) {
                    JrdmaEvents.leaseEnded(r.memory().address(), r.memory().byteSize(), r.rkey(), millis);
                }
            });
        } catch (RuntimeException e) {
            res.endScoped(r);   // no timer would end it (the Rdma is closing): it ends now, not with the connection
            throw e;
        }
        return new RemoteRegion(segment.address(), segment.byteSize(), r.rkey(),
                bits | (root().directWriteToPmem ? RemoteRegion.DIRECT_WRITE_TO_PMEM : 0), end);
    }

    /** A positive duration the lease timer can count (nanoseconds in a long: about 292 years), else refused by name. */
    private static void checkLeaseDuration(String op, Duration duration) {
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(op + ": the duration must be positive, not " + duration);
        }
        try {
            duration.toNanos();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(op + ": " + duration + " is longer than a lease can last (292 years)");
        }
    }

    /** Leases and connection-scoped exposures of this region (and its slices) still open: for tests. */
    int openLeases() {
        return resources.openLeases();
    }

    private int defaultRights() {
        return pooled ? rdma.memory().maxRemoteAccess() : registration.access() & REMOTE_MASK;
    }

    /** {@code rights} as access bits, checked against what may be granted; {@code op} names the call in messages. */
    private int rightsBits(String op, Access... rights) {
        int bits = Access.bits(rights);
        if ((bits & ~REMOTE_MASK) != 0) {
            throw new IllegalArgumentException(op + ": grants remote rights only (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC), not "
                    + AccessFlags.names(bits & ~REMOTE_MASK));
        }
        int beyond = bits & ~rdma.memory().maxRemoteAccess();
        if (beyond != 0) {
            throw new IllegalArgumentException(op + ": " + AccessFlags.names(beyond)
                    + " is beyond what this Rdma lets peers have (maxRemoteAccess " + AccessFlags.names(rdma.memory().maxRemoteAccess()) + ")");
        }
        if (!pooled && (bits & ~registration.access()) != 0) {
            throw new IllegalArgumentException(op + ": the region was registered without " + AccessFlags.names(bits & ~registration.access())
                    + " (it has " + AccessFlags.names(registration.access()) + ")");
        }
        return bits;
    }

    private RemoteRegion toRemoteWith(int rights) {
        int granted = rights;
        if (root().directWriteToPmem) {
            granted |= RemoteRegion.DIRECT_WRITE_TO_PMEM;
        }
        return new RemoteRegion(segment.address(), segment.byteSize(), resources.exposure(segment, rights).rkey(), granted);
    }

    /**
     * Declares that this memory is persistent and that the device writes reach it directly (no
     * volatile cache such as DDIO on the way), so peers may ask for {@link FlushType#PERSISTENT}
     * flushes to it. jrdma cannot check this: it is the owner's promise, as in librpma. Applies
     * to the descriptors made after it, of this region and its slices.
     *
     * @return this region
     */
    public LocalRegion declareDirectWriteToPmem() {
        root().directWriteToPmem = true;
        return this;
    }

    /**
     * Drops the region's exposures (any later remote use of their rkeys fails) and gives its
     * memory back, and its registration up, once the operations posted on it ended (for a slice:
     * nothing, the parent owns it). Idempotent and thread-safe; it does not wait. On a single-threaded
     * {@link Rdma} only its owner thread may close a region (another gets IllegalStateException).
     */
    @Override
    public void close() {
        if (parent == null) {
            resources.close();
        }
    }

    @Override
    public String toString() {
        return String.format("LocalRegion[address=0x%x, length=%d, lkey=0x%x, %s]", segment.address(),
                segment.byteSize(), registration.lkey(), pooled ? "pooled" : "access=" + AccessFlags.names(registration.access()));
    }
}
