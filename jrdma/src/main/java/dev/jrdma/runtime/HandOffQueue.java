package dev.jrdma.runtime;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What other threads hand an IO loop: many producers, one consumer (the loop's owner), FIFO per
 * producer. A preallocated ring, as Agrona's {@code ManyToOneConcurrentArrayQueue}: an offer is one
 * compare-and-set of the tail and a release store of the element, no node allocated. When the ring
 * is full (the loop is far behind) an offer goes to an unbounded overflow queue instead, so that a
 * hand-off never fails and never waits for the loop: a loop that waited for itself would hang.
 *
 * <p>Order: an offer goes to the overflow while the overflow holds anything, and the consumer takes
 * the ring before the overflow; so one producer's elements come out in the order it offered them
 * (different producers' offers are not ordered among themselves, as with any concurrent queue).
 *
 * <p>Threads: {@link #offer} from any thread; {@link #poll} and {@link #isEmpty} only by the loop's
 * owner (for an inline loop the thread in a pass: passes hand the role on with a release and an
 * acquire). {@link #isEmpty} reads the tail with volatile semantics, so that a loop which has said
 * it sleeps and then finds the queue empty cannot miss an offer that looks at its sleep flag after.
 */
final class HandOffQueue<E> {
    /** Slots of the ring; a power of two. */
    static final int DEFAULT_CAPACITY = 1024;

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final VarHandle TAIL;
    private static final VarHandle HEAD;
    private static final VarHandle HEAD_CACHE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(HandOffQueue.class, "tail", long.class);
            HEAD = l.findVarHandle(HandOffQueue.class, "head", long.class);
            HEAD_CACHE = l.findVarHandle(HandOffQueue.class, "headCache", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object[] ring;
    private final int mask;
    /** The next slot a producer takes; advanced by compare-and-set. */
    @SuppressWarnings("unused")
    private volatile long tail;
    /** The next slot the consumer reads; written by the consumer only, with release stores. */
    @SuppressWarnings("unused")
    private volatile long head;
    /** The producers' last look at {@link #head}: a full check reads the consumer's line only when it must. */
    @SuppressWarnings("unused")
    private volatile long headCache;
    private final ConcurrentLinkedQueue<E> overflow = new ConcurrentLinkedQueue<>();
    /**
     * Set (volatile) by a producer after it added to {@link #overflow}, cleared by the consumer
     * before it finds the overflow empty: so that the consumer's look at an empty queue, every
     * pass of a spinning loop, reads the ring's two counters and this word, not the overflow
     * queue's nodes (counted: the empty look was a fifth of an idle pass). A producer sets it
     * after its add, and the consumer looks at the overflow after clearing it, so an element is
     * never left behind a cleared flag.
     */
    private volatile boolean overflowed;

    HandOffQueue() {
        this(DEFAULT_CAPACITY);
    }

    HandOffQueue(int capacity) {
        if (capacity < 2 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("capacity must be a power of two of at least 2, not " + capacity);
        }
        this.ring = new Object[capacity];
        this.mask = capacity - 1;
    }

    /** Hands {@code e} to the consumer; never fails, never blocks. Any thread. */
    void offer(E e) {
        if (e == null) {
            throw new NullPointerException("element");
        }
        if (overflowed || !offerToRing(e)) {
            overflow.add(e);
            overflowed = true;
        }
    }

    private boolean offerToRing(E e) {
        long limit = (long) HEAD_CACHE.getOpaque(this) + ring.length;
        long t;
        do {
            t = (long) TAIL.getVolatile(this);
            if (t >= limit) {
                long h = (long) HEAD.getVolatile(this);
                limit = h + ring.length;
                if (t >= limit) {
                    return false;
                }
                HEAD_CACHE.setOpaque(this, h);
            }
        } while (!TAIL.compareAndSet(this, t, t + 1));
        SLOT.setRelease(ring, (int) t & mask, e);
        return true;
    }

    /**
     * The next element, or null when there is none yet. An element whose producer has taken its
     * slot but not yet written it counts as not there: {@link #isEmpty} says false meanwhile.
     */
    @SuppressWarnings("unchecked")
    E poll() {
        long h = (long) HEAD.getOpaque(this);
        int i = (int) h & mask;
        Object e = SLOT.getAcquire(ring, i);
        if (e != null) {
            SLOT.setOpaque(ring, i, null);
            HEAD.setRelease(this, h + 1);
            return (E) e;
        }
        if ((long) TAIL.getVolatile(this) != h) {
            return null;   // a producer between its compare-and-set and its store: the ring keeps order
        }
        return overflowed ? pollOverflow() : null;
    }

    /** The ring is empty and a producer has used the overflow: its oldest element, or null (then the flag is down). */
    private E pollOverflow() {
        E e = overflow.poll();
        if (e == null) {
            overflowed = false;
            e = overflow.poll();   // added before the flag went down, by a producer that then set it again or is about to
            if (e != null) {
                overflowed = true;
            }
        }
        return e;
    }

    /** Whether nothing is handed over, nor being handed over. The consumer only. */
    boolean isEmpty() {
        return (long) TAIL.getVolatile(this) == (long) HEAD.getOpaque(this) && (!overflowed || overflow.isEmpty());
    }
}
