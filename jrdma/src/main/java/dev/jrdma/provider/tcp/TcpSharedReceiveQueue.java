package dev.jrdma.provider.tcp;

import dev.jrdma.os.Errno;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.WorkCompletion;

import java.util.ArrayList;
import java.util.List;

/**
 * The tcp (and shm) provider's shared receive queue: receives posted by the owner, each handed
 * out whole to the one queue pair whose message claims it ({@link Share#claim}) when that
 * message's header arrives, not when it ends: with several progress threads, two messages must
 * never land in one buffer. A queue pair that found it empty is woken by the next post. One lock
 * guards it: posts come from the owner, claims from the queue pairs' progress threads.
 *
 * <p>A fair share ({@link #shareFairly}): each queue pair's share counts the receives it holds,
 * from its claim until the owner posts that work request id again (its message was read and the
 * buffer came back), through {@link LentReceives}. While no more than the reserve are posted, a
 * share that holds its fair number or more claims none: its message waits (RNR) as if none were
 * posted, and the reserve goes to queue pairs that hold fewer. A connection whose receiver never
 * gives buffers back can take the pool down to the reserve, never below it.
 */
final class TcpSharedReceiveQueue implements Srq {
    private final TcpRegistrations registrations;
    private final Runnable onLimit;
    private final int capacity;
    // A FIFO ring of posted receives: first at `first`, `count` of them. Guarded by this.
    private final long[] wrId, address;
    private final int[] length, lkey;
    private int first, count;
    private int limit;   // armed when > 0
    private boolean closed;
    /** Queue pairs that found no receive, to wake at the next post. Guarded by this. */
    private final List<TcpQueuePair> waiting = new ArrayList<>();
    /** Who holds each receive handed out, until it is posted again. Guarded by this. */
    private final LentReceives<Share> lent;
    /** A share holding this many or more takes none of the last {@link #reserve} posted. Guarded by this. */
    private int fairShare = Integer.MAX_VALUE;
    private int reserve;

    TcpSharedReceiveQueue(TcpRegistrations registrations, int capacity, Runnable onLimit) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a shared receive queue holds 1 receive or more, not " + capacity);
        }
        this.registrations = registrations;
        this.capacity = capacity;
        this.onLimit = onLimit;
        wrId = new long[capacity];
        address = new long[capacity];
        length = new int[capacity];
        lkey = new int[capacity];
        lent = new LentReceives<>(capacity);
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public int postRecv(long id, long at, int bytes, int key) {
        if (bytes > 0 && registrations.check(key, at, bytes, AccessFlags.LOCAL_WRITE, null) == null) {
            return Errno.EINVAL;
        }
        TcpQueuePair[] wake;
        synchronized (this) {
            if (closed) {
                return Errno.EINVAL;
            }
            if (count == capacity) {
                return Errno.ENOMEM;
            }
            Share holder = lent.giveBack(id);
            if (holder != null) {
                holder.inUse--;
            }
            push(id, at, bytes, key);
            if (waiting.isEmpty()) {
                return 0;
            }
            wake = waiting.toArray(new TcpQueuePair[0]);
            waiting.clear();
        }
        for (TcpQueuePair qp : wake) {
            qp.receivePosted();
        }
        return 0;
    }

    private void push(long id, long at, int bytes, int key) {
        int i = (first + count) % capacity;
        wrId[i] = id;
        address[i] = at;
        length[i] = bytes;
        lkey[i] = key;
        count++;
    }

    @Override
    public synchronized void armLimit(int limit) {
        if (limit < 0 || limit > capacity) {
            throw new IllegalArgumentException("a limit of " + limit + " receives on a shared receive queue of "
                    + capacity);
        }
        this.limit = limit;
    }

    @Override
    public synchronized boolean shareFairly(int perConnection, int reserve) {
        Srq.super.shareFairly(perConnection, reserve);   // checks the values
        this.fairShare = perConnection;
        this.reserve = reserve;
        return true;
    }

    @Override
    public synchronized void close() {
        closed = true;
        count = 0;
        waiting.clear();
        lent.clear();
    }

    /** A queue pair's share: the receive it claimed for its current message, if any. */
    Share share(TcpQueuePair qp) {
        return new Share(qp);
    }

    /** Whether this queue is of the device with these registrations. */
    boolean of(TcpRegistrations r) {
        return registrations == r;
    }

    /** Posted and not claimed (for tests and diagnostics). */
    synchronized int posted() {
        return count;
    }

    /** Receives {@code share} holds now (for tests and diagnostics). */
    synchronized int inUse(ReceiveSource share) {
        return ((Share) share).inUse;
    }

    /** One queue pair's view: {@link ReceiveSource} over the shared queue. On that queue pair's progress thread. */
    final class Share implements ReceiveSource {
        private final TcpQueuePair qp;
        /** Receives it claimed that were not posted again (held now, or lent in a message). Guarded by the queue. */
        private int inUse;
        private boolean held;
        private long heldId, heldAddress;
        private int heldLength, heldLkey;

        private Share(TcpQueuePair qp) {
            this.qp = qp;
        }

        @Override
        public boolean claim() {
            if (held) {
                return true;
            }
            boolean fire;
            synchronized (TcpSharedReceiveQueue.this) {
                if (count == 0 || (count <= reserve && inUse >= fairShare)) {
                    // None posted, or only the reserve and this share has its fair number: it waits
                    // for a post (a buffer of its own coming back, or the pool refilled).
                    if (!closed && qp != null && !waiting.contains(qp)) {
                        waiting.add(qp);
                    }
                    return false;
                }
                int i = first;
                heldId = wrId[i];
                heldAddress = address[i];
                heldLength = length[i];
                heldLkey = lkey[i];
                first = (first + 1) % capacity;
                count--;
                if (lent.lend(heldId, this)) {
                    inUse++;
                }
                fire = limit > 0 && count < limit;
                if (fire) {
                    limit = 0;   // one event per arming, as IBV_EVENT_SRQ_LIMIT_REACHED
                }
            }
            held = true;
            if (fire) {
                onLimit.run();
            }
            return true;
        }

        @Override
        public boolean holds() {
            return held;
        }

        @Override
        public long address() {
            return heldAddress;
        }

        @Override
        public int length() {
            return heldLength;
        }

        @Override
        public int lkey() {
            return heldLkey;
        }

        @Override
        public long take() {
            held = false;
            return heldId;
        }

        /**
         * The claimed receive goes back, first as it was the oldest: it belongs to the shared
         * queue, not to this QP. When the owner filled the queue meanwhile it completes flushed
         * here instead, and the owner posts it again.
         */
        @Override
        public void flush(TcpCompletionQueue cq) {
            boolean returned = false;
            synchronized (TcpSharedReceiveQueue.this) {
                waiting.remove(qp);
                Share holder = held ? lent.giveBack(heldId) : null;
                if (holder != null) {
                    holder.inUse--;   // back in the queue, or completed flushed (then the owner posts it again)
                }
                if (held && !closed && count < capacity) {
                    first = (first - 1 + capacity) % capacity;
                    wrId[first] = heldId;
                    address[first] = heldAddress;
                    length[first] = heldLength;
                    lkey[first] = heldLkey;
                    count++;
                    returned = true;
                }
            }
            if (held && !returned) {
                cq.add(heldId, WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
            }
            held = false;
        }
    }
}
