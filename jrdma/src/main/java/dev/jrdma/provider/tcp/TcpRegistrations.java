package dev.jrdma.provider.tcp;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.spi.AccessFlags;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The registrations of one tcp device, by key. A key is an index into this table (low 20
 * bits) and a generation (high 12 bits) that changes each time the index is reused, so a key
 * of a closed registration does not name its successor. Lookups are lock-free (the progress
 * threads); registering and closing are serialised here.
 */
final class TcpRegistrations {
    static final int INDEX_BITS = 20;
    private static final int INDEX_MASK = (1 << INDEX_BITS) - 1;
    /** About a million registrations at once: far more than a pool needs (it registers chunks). */
    private static final int CAPACITY = 1 << INDEX_BITS;

    private final AtomicReferenceArray<TcpMemoryRegistration> table = new AtomicReferenceArray<>(CAPACITY);
    private final int[] generation = new int[CAPACITY];
    private final int[] free = new int[CAPACITY];
    private int freeTop;
    private int nextFresh = 1;   // index 0 unused: key 0 never names memory
    /** Queue pairs with a same-host peer: they copy to and from registered memory on posting threads. */
    private final java.util.concurrent.CopyOnWriteArrayList<TcpQueuePair> directUsers =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    void addDirectUser(TcpQueuePair qp) {
        directUsers.addIfAbsent(qp);
    }

    void removeDirectUser(TcpQueuePair qp) {
        directUsers.remove(qp);
    }

    /**
     * Waits out every direct operation under way: each runs under its queue pair's txLock after
     * finding its registration open, so once a closed registration has passed through every
     * such lock no copy touches it any more. Lets the direct path (a posting thread's hot path)
     * go without the registration's enter/exit atomics.
     */
    void quiesce() {
        for (TcpQueuePair qp : directUsers) {
            qp.quiesce();
        }
    }

    synchronized TcpMemoryRegistration register(MemorySegment memory, int access) {
        int index;
        if (freeTop > 0) {
            index = free[--freeTop];
        } else if (nextFresh < CAPACITY) {
            index = nextFresh++;
        } else {
            throw new RdmaException("tcp: " + (CAPACITY - 1)
                    + " memory registrations exist already; close some (or use the pool, which registers large chunks)");
        }
        int key = (generation[index] << INDEX_BITS) | index;
        TcpMemoryRegistration r = new TcpMemoryRegistration(this, memory, key, access);
        table.set(index, r);
        return r;
    }

    synchronized void remove(TcpMemoryRegistration r) {
        int index = r.lkey() & INDEX_MASK;
        if (table.get(index) == r) {
            table.set(index, null);
            generation[index] = (generation[index] + 1) & ((1 << (32 - INDEX_BITS)) - 1);
            free[freeTop++] = index;
        }
    }

    /** The open registration with {@code key}, or null. */
    TcpMemoryRegistration lookup(int key) {
        TcpMemoryRegistration r = table.get(key & INDEX_MASK);
        return r != null && r.lkey() == key && !r.isClosed() ? r : null;
    }

    /**
     * The registration that grants {@code access} over {@code [address, address + length)}
     * under {@code key}, or null; {@code why} (when not null) gets the reason for a refusal.
     */
    TcpMemoryRegistration check(int key, long address, long length, int access, StringBuilder why) {
        TcpMemoryRegistration r = lookup(key);
        if (r == null) {
            if (why != null) {
                why.append("no registration has key 0x").append(Integer.toHexString(key));
            }
            return null;
        }
        if ((r.access() & access) != access) {
            if (why != null) {
                why.append(r).append(" does not grant ").append(AccessFlags.names(access & ~r.access()));
            }
            return null;
        }
        if (!r.covers(address, length)) {
            if (why != null) {
                why.append("[0x").append(Long.toHexString(address)).append(", +").append(length)
                        .append(") is outside ").append(r);
            }
            return null;
        }
        return r;
    }
}
