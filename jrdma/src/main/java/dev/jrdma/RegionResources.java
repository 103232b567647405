package dev.jrdma;

import dev.jrdma.runtime.IoThread;
import dev.jrdma.engine.region.LeakDetector;
import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a {@link LocalRegion} (with its slices) holds: its registration, its exposures and leases,
 * and its memory's owner (a pool block, or nothing for the application's memory). Kept apart
 * from the region so that {@link Rdma} can track and release it without keeping the region
 * reachable: a region the application dropped without closing can then be reported (leak
 * detection), and its memory is still released when the {@code Rdma} closes.
 */
final class RegionResources {
    private static final VarHandle CLOSED, USES;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            CLOSED = l.findVarHandle(RegionResources.class, "closed", boolean.class);
            USES = l.findVarHandle(RegionResources.class, "uses", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Set in {@link #uses} by {@link #close}: from then on no operation takes the memory, and the last to end frees it. */
    private static final long CLOSING = 1L << 62;

    final MemoryRegistration registration;
    /** Pooled: the registration is local-only, remote rights come from exposures. */
    final boolean pooled;
    final Rdma rdma;
    final long address, length;
    private final AutoCloseable owner;
    /**
     * The single-threaded Rdma's IO ({@code Rdma.Builder.singleThreaded}), whose thread alone posts,
     * completes and closes: {@link #uses} is then counted with plain steps. Null otherwise.
     */
    private final IoThread confinedTo;
    /**
     * Registrations for peers, by the range they expose (the region, or a slice: a peer given a
     * slice reaches exactly that slice) and the rights; guarded by this.
     */
    private Map<Exposure, MemoryRegistration> exposures;

    private record Exposure(long address, long length, int rights) {
    }
    /** Registrations of leases not yet ended, or ended and still reachable by a peer; guarded by this. */
    private List<MemoryRegistration> leases;
    private volatile boolean closed;
    /**
     * Operations in flight with this memory as their local buffer (a send's or write's source, a
     * read's target), plus {@link #CLOSING} once closed. The device (or a peer's answer) may still
     * read or write the memory until they end, so it goes back, and a registration of its own is
     * dropped, only when the count is 0 and the region closed: whoever makes it so does it.
     */
    private volatile long uses;
    /**
     * Parts still to end before the memory goes back: the operations in flight (one part) and
     * each exposure a peer may still reach; set by {@link #close}.
     */
    private volatile AtomicInteger ownerGate;
    /** The leak detector's reference to the region, when leak detection is on. */
    volatile LeakDetector.Watch<RegionResources> leak;

    RegionResources(MemorySegment segment, MemoryRegistration registration, AutoCloseable owner, Rdma rdma, boolean pooled) {
        this.confinedTo = rdma.io().confined();
        this.registration = registration;
        this.owner = owner;
        this.rdma = rdma;
        this.pooled = pooled;
        this.address = segment.address();
        this.length = segment.byteSize();
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * An operation is about to be posted with this memory as its local buffer: counts it, or
     * returns false (counting nothing) when the region is closed. The increment comes before the
     * look at CLOSING, and close sets CLOSING before it looks at the count (both full fences), so
     * either close sees this operation and waits for it, or this operation sees the close.
     */
    boolean acquireForOperation() {
        if (confinedTo != null) {
            // Single-threaded: posts, completions and close all run on the owner; plain steps.
            long uses = (long) USES.get(this);
            if ((uses & CLOSING) != 0) {
                return false;
            }
            USES.set(this, uses + 1);
            return true;
        }
        long before = (long) USES.getAndAdd(this, 1L);
        if ((before & CLOSING) == 0) {
            return true;
        }
        releaseFromOperation();
        return false;
    }

    /** That operation ended (completed, flushed, or was not posted after all). */
    void releaseFromOperation() {
        long now;
        if (confinedTo != null) {
            now = (long) USES.get(this) - 1;
            USES.set(this, now);
        } else {
            now = (long) USES.getAndAdd(this, -1L) - 1;
        }
        if (now == CLOSING) {
            operationsEnded();   // closed, and this was the last one in flight
        }
    }

    /** Operations in flight on this memory: for tests. */
    long operationsInFlight() {
        return uses & ~CLOSING;
    }

    /** The region is closed and nothing in flight uses its memory: its own registration goes, and its part of the gate. */
    private void operationsEnded() {
        try {
            if (!pooled) {
                registration.close();
            }
        } finally {
            gateDown();
        }
    }

    private void gateDown() {
        if (ownerGate.decrementAndGet() == 0) {
            closeOwner();
        }
    }

    /**
     * The registration peers use for {@code rights} over {@code memory}: the region itself or a
     * slice of it, exactly (a slice's key reaches the slice, not its parent); registered on first
     * use. On verbs that is a memory registration of the range.
     */
    synchronized MemoryRegistration exposure(MemorySegment memory, int rights) {
        if (closed) {
            throw new IllegalStateException("toRemote: this region is closed: " + this);
        }
        boolean whole = memory.address() == address && memory.byteSize() == length;
        if (whole && !pooled && rights == (registration.access() & AccessFlags.REMOTE_MASK)) {
            return registration;
        }
        if (exposures == null) {
            exposures = new HashMap<>();
        }
        Exposure key = new Exposure(memory.address(), memory.byteSize(), rights);
        MemoryRegistration e = exposures.get(key);
        if (e == null) {
            e = rdma.memory().exposure(memory, withLocalWrite(rights));
            exposures.put(key, e);
            JrdmaEvents.regionExposed(memory.address(), memory.byteSize(), e.rkey(), AccessFlags.names(rights), "every peer");
        }
        return e;
    }

    /** A registration of {@code memory} (the region or a slice of it) for a lease. */
    synchronized MemoryRegistration newLease(MemorySegment memory, int rights) {
        if (closed) {
            throw new IllegalStateException("lease: this region is closed: " + this);
        }
        MemoryRegistration r = rdma.memory().exposure(memory, withLocalWrite(rights));
        if (leases == null) {
            leases = new ArrayList<>();
        }
        leases.add(r);
        JrdmaEvents.regionExposed(memory.address(), memory.byteSize(), r.rkey(), AccessFlags.names(rights), "lease");
        return r;
    }

    /**
     * Exposures scoped to one connection and not ended yet, with the hook each left on its
     * connection: a region that closes first takes its hooks back, so a long-lived connection
     * does not keep closed regions reachable. Guarded by this.
     */
    private Map<MemoryRegistration, ScopedHook> scoped;

    private record ScopedHook(Connection connection, Runnable end) {
    }

    /**
     * A registration of {@code memory} (the region or a slice of it) that only the peer of
     * {@code connection} may use; it ends like a lease ({@link #endLease}) when that connection
     * is released, or with this region. {@code op} names the call in messages.
     */
    MemoryRegistration newScoped(String op, MemorySegment memory, int rights, Connection connection) {
        MemoryRegistration r;
        Runnable end;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(op + ": this region is closed: " + this);
            }
            // Where the device has memory windows, a window bound on the connection's QP; else the
            // provider's own scoped key (tcp, shm), or its refusal (verbs without windows).
            r = rdma.device().bindsWindows() ? connection.bindWindow(op, rdma.device(), registration, memory, withLocalWrite(rights))
                    : rdma.memory().exposureFor(connection.establishedQueuePair(op), memory, withLocalWrite(rights));
            if (leases == null) {
                leases = new ArrayList<>();
            }
            leases.add(r);
            if (scoped == null) {
                scoped = new HashMap<>();
            }
            end = () -> {
                synchronized (this) {
                    if (scoped == null || scoped.remove(r) == null) {
                        return;   // ended already: its lease's time was up, or the region closed
                    }
                }
                endLease(r);
                JrdmaEvents.regionRevoked(memory.address(), memory.byteSize(), r.rkey(), "its connection was released");
            };
            scoped.put(r, new ScopedHook(connection, end));
        }
        JrdmaEvents.regionExposed(memory.address(), memory.byteSize(), r.rkey(), AccessFlags.names(rights),
                "the connection to " + connection.remoteAddress());
        connection.addReleaseHook(end);   // outside the lock: it runs at once if the connection is gone
        if (r instanceof WindowRegistration w && !rdma.isIoThread()) {
            // Outside the lock too: the IO thread that completes the bind may need it (another
            // connection's release ending an exposure of this region).
            try {
                connection.awaitBind(op, w.bound);
            } catch (RuntimeException e) {
                connection.removeReleaseHook(end);
                end.run();
                throw e;
            }
        }
        return r;
    }

    /**
     * Ends a scoped exposure before its connection does (a lease for one peer whose time is up):
     * its connection forgets the hook, and the key is revoked as a lease's is.
     *
     * @return false when it had ended already (its connection, or this region, went first)
     */
    boolean endScoped(MemoryRegistration r) {
        ScopedHook hook;
        synchronized (this) {
            hook = scoped == null ? null : scoped.remove(r);
        }
        if (hook == null) {
            return false;
        }
        hook.connection().removeReleaseHook(hook.end());
        endLease(r);
        return true;
    }

    /** Registrations of leases and scoped exposures not yet ended (or still reachable): for tests. */
    synchronized int openLeases() {
        return leases == null ? 0 : leases.size();
    }

    /** The lease's time is up: drop its registration; forget it once no peer can reach it. */
    void endLease(MemoryRegistration r) {
        r.close();
        r.whenReleasedByPeers(() -> {
            synchronized (this) {
                if (leases != null) {
                    leases.remove(r);
                }
            }
        });
    }

    private static int withLocalWrite(int rights) {
        // Remote write and atomics need local write (a verbs rule); a read-only registration does not.
        return rights | ((rights & (AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0 ? AccessFlags.LOCAL_WRITE : 0);
    }

    /**
     * Drops the registrations (any later remote use of their rkeys fails) and gives the memory
     * back once no peer can reach it. Once; later calls do nothing.
     */
    void close() {
        if (confinedTo != null && !closed) {
            confinedTo.checkOwner("LocalRegion.close");   // its in-flight count is the owner's plain field
        }
        if (!CLOSED.compareAndSet(this, false, true)) {
            return;
        }
        rdma.live().untrack(this);
        List<MemoryRegistration> open = new ArrayList<>();
        // For the events: exposures and connection-scoped keys this close revokes (a lease, ended
        // or not, reports LeaseEnded when its time is up).
        List<MemoryRegistration> revoked = new ArrayList<>();
        synchronized (this) {
            if (exposures != null) {
                open.addAll(exposures.values());
                revoked.addAll(exposures.values());
            }
            if (leases != null) {
                open.addAll(leases);   // ended ones too: a peer may still reach them (shm)
            }
            exposures = null;
            leases = null;
            if (scoped != null) {
                revoked.addAll(scoped.keySet());
                scoped.values().forEach(h -> h.connection().removeReleaseHook(h.end()));
                scoped = null;
            }
        }
        // The memory goes back once no operation of ours still uses it and no peer can reach it
        // through any exposure; the exposures end now, so peers lose access at once.
        ownerGate = new AtomicInteger(open.size() + 1);
        RuntimeException failure = null;
        for (MemoryRegistration e : revoked) {
            JrdmaEvents.regionRevoked(e.memory().address(), e.memory().byteSize(), e.rkey(), "the region was closed");
        }
        for (MemoryRegistration e : open) {
            try {
                e.close();
            } catch (RuntimeException x) {
                failure = failure == null ? x : failure;
            }
            e.whenReleasedByPeers(this::gateDown);
        }
        if ((long) USES.getAndAdd(this, CLOSING) == 0) {
            try {
                operationsEnded();
            } catch (RuntimeException x) {
                failure = failure == null ? x : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private void closeOwner() {
        if (owner != null) {
            try {
                owner.close();
            } catch (Exception e) {
                throw new IllegalStateException("freeing the memory of " + this + " failed", e);
            }
        }
    }

    @Override
    public String toString() {
        return String.format("LocalRegion[address=0x%x, length=%d, lkey=0x%x, %s]", address, length, registration.lkey(),
                pooled ? "pooled" : "access=" + AccessFlags.names(registration.access()));
    }
}
