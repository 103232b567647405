package dev.jrdma;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The send queue's slots: one {@link SendOperation} each, in one of two single-producer
 * single-consumer rings.
 * <ul>
 * <li>free: the completing thread returns slots at the free tail, posters take them at the
 *     free head;</li>
 * <li>posted: posters add at the posted tail in posting order (the send queue completes in this
 *     order), the completing thread takes them from the posted head.</li>
 * </ul>
 * One more record, not in either free ring, is the teardown's {@link #marker()}.
 * Posters hold the connection's post lock; the completing thread (the IO thread, or in the
 * INLINE mode the thread in {@code IoThread.poll}, one at a time) takes no lock. Each ring's
 * tail is published with a release store after its entry and the record are written, and read
 * (volatile) before they are, so a record passes from poster to completer and back without a
 * lock. (A completion used to take the lock twice, which was most of its cost.)
 */
final class SendSlots {
    private final SendOperation[] ops;
    private final int depth;
    private final int[] freeRing;
    private final int[] postRing;
    private final int mask;
    private long freeHead;               // posters, under the post lock
    private volatile long freeTail;      // the completing thread (release stores)
    private volatile long postTail;      // posters under the post lock, and an emulated atomic's next attempt (release stores)
    private long postHead;               // the completing thread
    /** Posters waiting for a free slot (under the post lock); the completing thread notifies them. */
    private volatile int waiting;
    private final Object postLock;

    private static final VarHandle FREE_TAIL, POST_TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            FREE_TAIL = l.findVarHandle(SendSlots.class, "freeTail", long.class);
            POST_TAIL = l.findVarHandle(SendSlots.class, "postTail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    SendSlots(int depth, Object postLock) {
        this.depth = depth;
        this.postLock = postLock;
        // Capacity above depth: a poster that takes back its last take (untake) finds its entry
        // still there, as the completing thread can never have wrapped onto it.
        int capacity = Integer.highestOneBit(depth) << 1;
        mask = capacity - 1;
        ops = new SendOperation[depth + 1];
        ops[depth] = new SendOperation(depth);
        freeRing = new int[capacity];
        postRing = new int[capacity];
        for (int i = 0; i < depth; i++) {
            freeRing[i] = i;   // its record is made at its first take: a connection that posts little keeps few
        }
        freeTail = depth;
    }

    int depth() {
        return depth;
    }

    /** Free slots now; under the post lock. */
    int free() {
        return (int) (freeTail - freeHead);
    }

    /** Every slot is free and the marker is not out; under the post lock. */
    boolean allFree() {
        return freeTail - freeHead == depth && ops[depth].kind == SendOperation.FREE;
    }

    /** The record of the teardown's marker: one more than the slots, never in the free ring. */
    SendOperation marker() {
        return ops[depth];
    }

    /** The record of {@code slot} (0..depth, the marker's last), for its completion (the work request id); null for a slot never taken. */
    SendOperation get(int slot) {
        return ops[slot];
    }

    /** Takes a free slot for an operation of {@code kind}; under the post lock, when {@link #free()} > 0. */
    SendOperation take(Operation op, byte kind, Object completion, Object attachment) {
        int slot = freeRing[(int) freeHead & mask];
        SendOperation o = ops[slot];
        if (o == null) {
            // Published to the completing thread with the posted ring's release store, as the record's fields are.
            o = ops[slot] = new SendOperation(slot);
        }
        freeHead++;
        o.op = op;
        o.kind = kind;
        o.completion = completion;
        o.attachment = attachment;
        return o;
    }

    /** Gives back {@code o}, the last one taken and never posted; under the post lock. */
    void untake(SendOperation o) {
        o.clear();
        freeHead--;
        assert freeRing[(int) freeHead & mask] == o.slot;
    }

    /** Returns a finished slot; on the completing thread only. */
    void release(SendOperation o) {
        o.clear();
        if (o.slot == depth) {
            return;   // the marker: not a slot of the free ring
        }
        long t = freeTail;
        freeRing[(int) t & mask] = o.slot;
        FREE_TAIL.setRelease(this, t + 1);
        if (waiting > 0) {
            synchronized (postLock) {
                postLock.notifyAll();
            }
        }
    }

    /** Adds {@code o} after the others in flight; under the post lock, before it is posted. */
    void push(SendOperation o) {
        long t = postTail;
        postRing[(int) t & mask] = o.slot;
        POST_TAIL.setRelease(this, t + 1);
    }

    /** Takes back the record this thread just pushed (its post failed); under the post lock. */
    SendOperation popTail() {
        long t = postTail - 1;
        POST_TAIL.setRelease(this, t);
        return ops[postRing[(int) t & mask]];
    }

    /** Operations in flight now, as any thread sees it (the two ends read apart: an estimate under way). */
    long outstanding() {
        return (long) POST_TAIL.getOpaque(this) - postHead;
    }

    /** Operations ended so far (their records taken back); on the completing thread. */
    long ended() {
        return postHead;
    }

    /** Something is in flight; on the completing thread. */
    boolean anyPosted() {
        return postHead != postTail;
    }

    /** The oldest operation in flight; on the completing thread, when {@link #anyPosted()}. */
    SendOperation popHead() {
        SendOperation o = ops[postRing[(int) postHead & mask]];
        postHead++;
        return o;
    }

    /** Forgets what is in flight (after a release failed it all); on the completing thread. */
    void dropPosted() {
        postHead = postTail;
    }

    /** A poster starts or stops waiting for a free slot; under the post lock. */
    void waiting(int delta) {
        waiting += delta;
    }
}
