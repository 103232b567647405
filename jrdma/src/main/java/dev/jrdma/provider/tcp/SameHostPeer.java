package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.COMPARE_SWAP;
import static dev.jrdma.provider.tcp.TcpFrameDescriptor.FETCH_ADD;
import static dev.jrdma.provider.tcp.TcpFrameDescriptor.READ_REQUEST;
import static dev.jrdma.provider.tcp.TcpFrameDescriptor.WRITE;

import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a tcp queue pair knows of a peer on this host (shm): the peer's regions mapped here, by
 * key, on which one-sided operations are done directly; the keys asked about; and our closed
 * regions the peer was told to unmap. Guarded by the queue pair's transmit lock (direct
 * operations run on posting threads under it).
 */
final class SameHostPeer implements AutoCloseable {
    private static final VarHandle LONG_ATOMIC = ValueLayout.JAVA_LONG.varHandle();

    /** A peer's region mapped here: its base address there, length, access, and the mapping. */
    record PeerRegion(long base, long length, int access, MemorySegment mapped, Arena arena) {
    }

    final TcpSameHost support;
    /** The proven link to the peer: descriptors of its regions come over it. Owned by the queue pair. */
    final SameHostChannel channel;
    private final Map<Integer, PeerRegion> regions = new HashMap<>();
    /** Keys asked about once (not asked again while they stay unmapped). */
    private final Set<Integer> asked = new HashSet<>();
    /** Keys whose MAP_RESPONSE is still to come: any other MAP_RESPONSE is a lie. */
    private final Set<Integer> pending = new HashSet<>();
    private final Map<Integer, TcpMemoryRegistration> awaitingUnmap = new HashMap<>();
    private int lastKey;
    private PeerRegion last;

    SameHostPeer(TcpSameHost support, SameHostChannel channel) {
        this.support = support;
        this.channel = channel;
    }

    /** The peer's region {@code rkey} mapped here, or null; the last one used is kept at hand. */
    PeerRegion region(int rkey) {
        PeerRegion m = last;
        if (m != null && lastKey == rkey) {
            return m;
        }
        m = regions.get(rkey);
        if (m != null) {
            lastKey = rkey;
            last = m;
        }
        return m;
    }

    /** True the first time {@code rkey} is to be asked about (then a MAP_RESPONSE for it is expected). */
    boolean shouldAsk(int rkey) {
        if (asked.add(rkey)) {
            pending.add(rkey);
            return true;
        }
        return false;
    }

    /** A MAP_RESPONSE for {@code rkey} came: whether it was asked for (and not answered yet). */
    boolean answered(int rkey) {
        return pending.remove(rkey);
    }

    /** Keeps a mapping of the peer's region {@code rkey}. */
    void add(int rkey, PeerRegion m) {
        PeerRegion old = regions.put(rkey, m);
        last = null;
        if (old != null) {
            old.arena().close();
        }
    }

    /** The peer closed its region {@code rkey}: the mapping goes (no direct operation is under way: they hold the lock). */
    void remove(int rkey) {
        PeerRegion m = regions.remove(rkey);
        asked.remove(rkey);
        last = null;
        if (m != null) {
            m.arena().close();
        }
    }

    void awaitUnmap(TcpMemoryRegistration r) {
        awaitingUnmap.put(r.rkey(), r);
    }

    /** The peer unmapped our region {@code rkey}: the registration waiting for it, or null. */
    TcpMemoryRegistration unmapAcknowledged(int rkey) {
        return awaitingUnmap.remove(rkey);
    }

    /** The connection is over: every registration still waiting for an UNMAP_ACK (to let go). */
    List<TcpMemoryRegistration> takeAwaitingUnmap() {
        List<TcpMemoryRegistration> all = new ArrayList<>(awaitingUnmap.values());
        awaitingUnmap.clear();
        return all;
    }

    /**
     * A one-sided operation done here, on the peer's region mapped into this process: checked
     * against what the peer's registration grants, then a copy or a CPU atomic. Returns 0 or the
     * completion status it fails with (as the peer would have answered).
     */
    static int direct(PeerRegion m, byte type, long localAddr, int length, long remoteAddr, long compareAdd,
                      long swap) {
        int need = type == WRITE ? AccessFlags.REMOTE_WRITE : type == READ_REQUEST ? AccessFlags.REMOTE_READ
                : AccessFlags.REMOTE_ATOMIC;
        if ((m.access() & need) != need || remoteAddr < m.base() || remoteAddr - m.base() > m.length() - length) {
            return WorkCompletion.REM_ACCESS_ERR;
        }
        long off = remoteAddr - m.base();
        if ((type == COMPARE_SWAP || type == FETCH_ADD) && ((m.mapped().address() + off) & 7) != 0) {
            return WorkCompletion.REM_INV_REQ_ERR;
        }
        // No fence of the local registration here (two atomics per operation): this runs under
        // txLock, after the registration was found open under it, and closing a registration
        // takes the txLock of every queue pair that does direct operations (quiesce) after it
        // marks itself closed; so once close returns no copy from or into it is under way.
        MemorySegment here = MemorySegment.ofAddress(localAddr).reinterpret(length);
        switch (type) {
            case WRITE -> MemorySegment.copy(here, 0, m.mapped(), off, length);
            case READ_REQUEST -> MemorySegment.copy(m.mapped(), off, here, 0, length);
            case COMPARE_SWAP -> here.set(ValueLayout.JAVA_LONG_UNALIGNED, 0,
                    (long) LONG_ATOMIC.compareAndExchange(m.mapped(), off, compareAdd, swap));
            default -> here.set(ValueLayout.JAVA_LONG_UNALIGNED, 0,
                    (long) LONG_ATOMIC.getAndAdd(m.mapped(), off, compareAdd));
        }
        return 0;
    }

    @Override
    public void close() {
        for (PeerRegion m : regions.values()) {
            m.arena().close();
        }
        regions.clear();
        last = null;
    }
}
