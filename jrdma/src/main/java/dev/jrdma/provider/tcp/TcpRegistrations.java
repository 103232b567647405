package dev.jrdma.provider.tcp;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.spi.AccessFlags;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The registrations of one tcp device, by key. Keys come from {@link TcpMemoryKeys}: a secret
 * permutation of (generation, slot), so they are not guessable and a closed one never names
 * memory again; the slot is an index into this table. Lookups are lock-free (the progress
 * threads); registering and closing are serialised here.
 */
final class TcpRegistrations {
    /** About a million registrations at once: far more than a pool needs (it registers chunks). */
    private static final int CAPACITY = 1 << TcpMemoryKeys.SLOT_BITS;

    private final AtomicReferenceArray<TcpMemoryRegistration> table = new AtomicReferenceArray<>(CAPACITY);
    private final int[] generation = new int[CAPACITY];
    private final int[] free = new int[CAPACITY];
    private int freeTop;
    private int nextFresh = 0;
    private final TcpMemoryKeys keys = new TcpMemoryKeys();
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
        return register(memory, access, 0);
    }

    /** A registration whose key only the peer of the queue pair with scope {@code onlyScope} may use (0: any peer). */
    synchronized TcpMemoryRegistration register(MemorySegment memory, int access, long onlyScope) {
        int index;
        int key;
        do {
            if (freeTop > 0) {
                index = free[--freeTop];
            } else if (nextFresh < CAPACITY) {
                index = nextFresh++;
            } else {
                throw new RdmaException("tcp: " + CAPACITY + " memory registrations exist already, or every key of"
                        + " theirs was used once (keys are never reused); close some, or use the pool, which registers"
                        + " large chunks");
            }
            key = keys.key(index, generation[index]);
            if (key == 0) {
                retire(index);   // key 0 never names memory (a request without a buffer carries it)
                index = -1;
            }
        } while (index < 0);
        TcpMemoryRegistration r = new TcpMemoryRegistration(this, memory, key, access, onlyScope);
        table.set(index, r);
        return r;
    }

    synchronized void remove(TcpMemoryRegistration r) {
        int index = keys.slotOf(r.lkey());
        if (table.get(index) == r) {
            table.set(index, null);
            retire(index);
        }
    }

    /** The slot's current key is used up: the slot comes back with the next generation, or never. */
    private void retire(int index) {
        if (++generation[index] < TcpMemoryKeys.GENERATIONS) {
            free[freeTop++] = index;
        }
    }

    /**
     * Whether {@code key} was ever handed out by this device (open now or closed since): a peer
     * holding a key that never was did not get it from us, it guessed. Control path only (a
     * refused request): it takes the table's lock.
     */
    synchronized boolean everIssued(int key) {
        int slot = keys.slotOf(key), gen = keys.generationOf(key);
        if (key == 0 || slot >= nextFresh) {
            return false;
        }
        if (gen < generation[slot]) {
            return true;   // issued, and retired since (a slot's generation grows as each key is used up)
        }
        TcpMemoryRegistration r = table.get(slot);
        return gen == generation[slot] && r != null && r.lkey() == key;
    }

    /** The open registration with {@code key}, or null. */
    TcpMemoryRegistration lookup(int key) {
        // The registrations found last, by the key's low bits: a post checks its local key, and
        // a responder the peer's, once per operation, and undoing the key permutation costs
        // about as much as a same-host write. An entry is only a hint: it counts when it is
        // the registration of exactly this key and still open, so a racy or stale one (its
        // key closed, its slot reused) falls through to the table.
        TcpMemoryRegistration r = recent[key & RECENT_MASK];
        if (r != null && r.lkey() == key && !r.isClosed()) {
            return r;
        }
        r = table.get(keys.slotOf(key));
        if (r != null && r.lkey() == key && !r.isClosed()) {
            recent[key & RECENT_MASK] = r;
            return r;
        }
        return null;
    }

    private static final int RECENT_MASK = 63;
    /** Plain (racy) writes: a reference is written whole, and {@link TcpMemoryRegistration#lkey} is final. */
    private final TcpMemoryRegistration[] recent = new TcpMemoryRegistration[RECENT_MASK + 1];

    /**
     * The open registration with {@code key} that the peer of the queue pair with {@code scope} may use,
     * or null. A key scoped to another connection is, to this peer, a key that names nothing:
     * the answer says no more than that.
     */
    TcpMemoryRegistration lookupFrom(long scope, int key) {
        TcpMemoryRegistration r = lookup(key);
        return r != null && r.reachableFrom(scope) ? r : null;
    }

    /** {@link #check} for a request of the peer of the queue pair with {@code scope}. */
    TcpMemoryRegistration checkFrom(long scope, int key, long address, long length, int access, StringBuilder why) {
        return check(lookupFrom(scope, key), key, address, length, access, why);
    }

    /**
     * The registration that grants {@code access} over {@code [address, address + length)}
     * under {@code key}, or null; {@code why} (when not null) gets the reason for a refusal.
     * For this side's own (local) use; a peer's requests go through {@link #checkFrom}.
     */
    TcpMemoryRegistration check(int key, long address, long length, int access, StringBuilder why) {
        return check(lookup(key), key, address, length, access, why);
    }

    private static TcpMemoryRegistration check(TcpMemoryRegistration r, int key, long address, long length, int access,
                                               StringBuilder why) {
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
