package dev.jrdma.provider.tcp;

import dev.jrdma.os.Errno;
import dev.jrdma.spi.WorkCompletion;

/**
 * A tcp queue pair's receive queue: receives posted by the owner (one posting thread at a time),
 * taken in order by the progress thread as the peer's SENDs and WRITE_WITH_IMMs arrive. The
 * entry of position p is at {@code (p - 1) & mask}; the poster publishes {@code tail}, the
 * progress thread {@code head}.
 */
final class TcpReceiveQueue implements ReceiveSource {
    private final int mask;
    private final int depth;
    private final long[] wrId, address;
    private final int[] length, lkey;
    private volatile long tail;   // 1..tail posted
    private volatile long head;   // 1..head taken

    TcpReceiveQueue(int depth) {
        int capacity = Integer.highestOneBit(Math.max(1, depth - 1)) << 1;
        this.mask = capacity - 1;
        this.depth = depth;
        wrId = new long[capacity];
        address = new long[capacity];
        length = new int[capacity];
        lkey = new int[capacity];
    }

    /** Posts a receive (the caller checked its buffer); 0, or ENOMEM when the queue is full. On the posting thread. */
    int post(long id, long at, int bytes, int key) {
        long t = tail + 1;
        if (t - head > mask + 1 || t - head > depth) {
            return Errno.ENOMEM;
        }
        int i = (int) (t - 1) & mask;
        wrId[i] = id;
        address[i] = at;
        length[i] = bytes;
        lkey[i] = key;
        tail = t;
        return 0;
    }

    /** No receive is posted and not taken. */
    boolean isEmpty() {
        return head == tail;
    }

    /** The oldest receive is the held one: nothing to hand out, it stays first until taken. */
    @Override
    public boolean claim() {
        return head != tail;
    }

    @Override
    public boolean holds() {
        return head != tail;
    }

    /** The oldest receive's buffer: address, length, key (only when one {@link #holds}). */
    @Override
    public long address() {
        return address[(int) head & mask];
    }

    @Override
    public int length() {
        return length[(int) head & mask];
    }

    @Override
    public int lkey() {
        return lkey[(int) head & mask];
    }

    /** Takes the oldest receive; returns its work request id. On the progress thread. */
    @Override
    public long take() {
        long h = head;
        long id = wrId[(int) h & mask];
        head = h + 1;
        return id;
    }

    @Override
    public void flush(TcpCompletionQueue cq) {
        while (head != tail) {
            cq.add(take(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
        }
    }
}
