package dev.jrdma.engine.io;

import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.SharedCompletionSink;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The completion queues that the connections of one IO thread share, as a UCX worker's (verbs:
 * {@link Device#sharedCompletionQueueDepth}): one {@code ibv_poll_cq} a pass serves every
 * connection of the thread, where a queue per connection costs a downcall per connection per
 * pass, idle or not. A completion's queue pair number ({@code ibv_wc.qp_num}) finds the
 * connection it is of.
 *
 * <p>A connection {@linkplain #join joins} with its depth (send queue, teardown marker, receive
 * queue): the first queue with that much room left takes it, or a new one is made, so a queue
 * never holds more outstanding requests than it has entries (a CQ overrun would fail every
 * connection on it). Its room is given back when it {@linkplain #leave leaves}, after its queue
 * pair was destroyed. Queues are kept until the {@code Rdma} closes.
 *
 * <p>Threads: {@link #join} and {@link #register} from any thread (the control thread makes queue
 * pairs), under this object's lock: control path only. {@link #poll}, {@link #arm},
 * {@link #drain} and {@link #leave} on the IO thread, which alone touches the table of members
 * and its cache. {@link #close} on the closing thread once the IO thread has stopped.
 */
public final class SharedCompletions implements IoThread.Source, SharedCompletionSink {
    /** The entries of a new shared queue, unless a connection's depth needs more (and the device allows). */
    static final int DEFAULT_DEPTH = 4096;
    /** Completions taken from one queue in one call (the size of the provider's reused array). */
    private static final int BATCH = 32;
    /** Calls on one queue in one pass while each fills its batch: a busy queue does not starve the pass's other sources. */
    private static final int ROUNDS = 4;

    /** What a completion of a member's queue pair goes to, and what ends the member when that throws. */
    public interface Member extends CompletionSink {
        /** Handling one of its completions threw {@code t}: end the member (its connection fails); the thread goes on. */
        void failed(Throwable t);
    }

    private final IoThread io;
    private final Device device;
    private final CompletionChannel channel;
    private final int maxDepth;

    // ---- control side: under this object's lock
    private final List<Queue> queues = new ArrayList<>();
    /** The queues, as the IO thread polls them: replaced (never changed) under the lock. */
    private volatile CompletionQueue[] polled = new CompletionQueue[0];
    /** Members by queue pair number, from {@link #register} to {@link #leave}; the IO thread's table fills from it. */
    private final ConcurrentHashMap<Integer, Member> registered = new ConcurrentHashMap<>();

    // ---- the IO thread's
    private final MemberTable table = new MemberTable();
    private int lastQpNum = -1;
    private Member last;
    private boolean polling;
    /** Completions of a queue pair that has no member (left already): counted, logged, dropped. */
    private long strays;

    /** A shared queue and how much of it the members that joined it may fill. */
    private static final class Queue {
        final CompletionQueue cq;
        final int capacity;
        int reserved;

        Queue(CompletionQueue cq, int capacity) {
            this.cq = cq;
            this.capacity = capacity;
        }
    }

    /**
     * @param io       the IO thread that polls the queues
     * @param device   where the queues are made
     * @param channel  the thread's completion channel, or null (polling only)
     * @param maxDepth the most entries one queue may have ({@link Device#sharedCompletionQueueDepth})
     */
    public SharedCompletions(IoThread io, Device device, CompletionChannel channel, int maxDepth) {
        if (maxDepth <= 0) {
            throw new IllegalArgumentException("maxDepth " + maxDepth + ": the device does not share completion queues");
        }
        this.io = io;
        this.device = device;
        this.channel = channel;
        this.maxDepth = maxDepth;
    }

    /**
     * Finds room for {@code depth} more outstanding completions: a queue that has it, or a new one.
     * Any thread.
     *
     * @return the queue to make the connection's queue pair on, or null when {@code depth} is
     *         more than one queue may have (the connection then makes its own)
     */
    public synchronized CompletionQueue join(int depth) {
        if (depth <= 0 || depth > maxDepth) {
            return null;
        }
        for (Queue q : queues) {
            if (q.capacity - q.reserved >= depth) {
                q.reserved += depth;
                return q.cq;
            }
        }
        int capacity = Math.min(maxDepth, Math.max(depth, DEFAULT_DEPTH));
        Queue q = new Queue(device.createCompletionQueue(capacity, channel), capacity);
        q.reserved = depth;
        queues.add(q);
        CompletionQueue[] next = Arrays.copyOf(polled, polled.length + 1);
        next[next.length - 1] = q.cq;
        polled = next;
        // A loop asleep now has armed only the queues it had: a task makes it pass (and so arm
        // this one too) before it sleeps again.
        try {
            io.execute(() -> { });
        } catch (IllegalStateException stopped) {
            // the thread has stopped: nothing will complete here
        }
        return q.cq;
    }

    /** From now on, completions of queue pair {@code qpNum} go to {@code member}. Any thread; before anything is posted on it. */
    public void register(int qpNum, Member member) {
        registered.put(qpNum, member);
    }

    /**
     * The member of queue pair {@code qpNum} (-1: it never had one) has gone and its queue pair
     * is destroyed: completions of that number are no longer its, and {@code depth} of
     * {@code cq} is free again. On the IO thread.
     */
    public void leave(CompletionQueue cq, int qpNum, int depth) {
        if (qpNum >= 0) {
            registered.remove(qpNum);
            table.remove(qpNum);
            if (lastQpNum == qpNum) {
                lastQpNum = -1;
                last = null;
            }
        }
        synchronized (this) {
            for (Queue q : queues) {
                if (q.cq == cq) {
                    q.reserved -= depth;
                    return;
                }
            }
        }
    }

    @Override
    public int poll() {
        CompletionQueue[] qs = polled;
        int n = 0;
        polling = true;
        try {
            for (CompletionQueue q : qs) {
                for (int round = 0; round < ROUNDS; round++) {
                    int k = q.pollShared(this, BATCH);
                    n += k;
                    if (k < BATCH) {
                        break;
                    }
                }
            }
        } finally {
            polling = false;
        }
        return n;
    }

    /**
     * Takes what the queues hold now, unless inside a {@link #poll} (which will): a connection
     * that learns its peer left takes what the peer sent before it. On the IO thread.
     */
    public void drain() {
        if (polling) {
            return;
        }
        for (int i = 0; i < 64 && poll() > 0; i++) {
            // again, until empty
        }
    }

    @Override
    public void onCompletion(int qpNum, long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
        Member m = qpNum == lastQpNum ? last : find(qpNum);
        if (m == null) {
            long n = ++strays;
            Log.limited("sharedCompletions.stray", System.Logger.Level.DEBUG, io.name() + ": a completion of queue pair "
                    + qpNum + " (wr_id " + wrId + ", status " + status + "), which has no connection any more (" + n
                    + " so far): dropped");
            return;
        }
        try {
            m.onCompletion(wrId, status, opcode, byteLen, imm, withImm);
        } catch (Throwable t) {
            // One connection's failure ends that connection, not the completions of the others in this batch.
            try {
                m.failed(t);
            } catch (Throwable again) {
                t.addSuppressed(again);
                Log.quietly(System.Logger.Level.ERROR, io.name() + ": ending a connection whose completion failed", t);
            }
        }
    }

    /** The member of {@code qpNum}: the table, else the registrations (then remembered); null if none. */
    private Member find(int qpNum) {
        Member m = table.get(qpNum);
        if (m == null) {
            m = registered.get(qpNum);
            if (m == null) {
                return null;
            }
            table.put(qpNum, m);
        }
        lastQpNum = qpNum;
        last = m;
        return m;
    }

    @Override
    public void arm() {
        for (CompletionQueue q : polled) {
            q.arm();
        }
    }

    /** A queue failed to poll (an overrun, a device error): every member on this thread fails with it. */
    @Override
    public void failed(Throwable t) {
        for (Member m : registered.values()) {
            try {
                m.failed(t);
            } catch (Throwable again) {
                t.addSuppressed(again);
            }
        }
    }

    /** {@return how many shared queues there are} Any thread. */
    public int queues() {
        return polled.length;
    }

    /** {@return the entries reserved by the members that joined, over all queues} Any thread. */
    public synchronized int reserved() {
        int n = 0;
        for (Queue q : queues) {
            n += q.reserved;
        }
        return n;
    }

    /** {@return completions dropped because their queue pair had no member} On the IO thread. */
    public long strays() {
        return strays;
    }

    /**
     * Destroys the queues, once the IO thread has stopped and every queue pair on them is
     * destroyed (the connections are released before the threads stop); a queue that fails to go
     * is logged.
     */
    public synchronized void close() {
        for (Queue q : queues) {
            try {
                q.cq.close();
            } catch (RuntimeException e) {
                Log.quietly(System.Logger.Level.WARNING, io.name() + ": destroying a shared completion queue ("
                        + q.reserved + " of " + q.capacity + " entries still reserved)", e);
            }
        }
        queues.clear();
        polled = new CompletionQueue[0];
        registered.clear();
    }

    /**
     * Members by queue pair number: open addressing with linear probing, removal by shifting
     * back, so a lookup allocates nothing (a queue pair number is 24 bits, so no boxing cache
     * holds them). The IO thread's only.
     */
    static final class MemberTable {
        private int[] keys = new int[16];
        private Member[] values = new Member[16];
        private int size;

        Member get(int key) {
            int mask = keys.length - 1;
            for (int i = mix(key) & mask; ; i = (i + 1) & mask) {
                Member v = values[i];
                if (v == null) {
                    return null;
                }
                if (keys[i] == key) {
                    return v;
                }
            }
        }

        void put(int key, Member value) {
            if ((size + 1) * 2 > keys.length) {
                grow();
            }
            int mask = keys.length - 1;
            for (int i = mix(key) & mask; ; i = (i + 1) & mask) {
                if (values[i] == null) {
                    keys[i] = key;
                    values[i] = value;
                    size++;
                    return;
                }
                if (keys[i] == key) {
                    values[i] = value;
                    return;
                }
            }
        }

        void remove(int key) {
            int mask = keys.length - 1;
            int i = mix(key) & mask;
            while (values[i] != null && keys[i] != key) {
                i = (i + 1) & mask;
            }
            if (values[i] == null) {
                return;
            }
            values[i] = null;
            size--;
            // Shift back the entries after it whose home is not between the hole and them.
            for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
                int home = mix(keys[j]) & mask;
                if (((j - home) & mask) >= ((j - i) & mask)) {
                    keys[i] = keys[j];
                    values[i] = values[j];
                    values[j] = null;
                    i = j;
                }
            }
        }

        int size() {
            return size;
        }

        private void grow() {
            int[] oldKeys = keys;
            Member[] oldValues = values;
            keys = new int[oldKeys.length * 2];
            values = new Member[oldKeys.length * 2];
            size = 0;
            for (int i = 0; i < oldKeys.length; i++) {
                if (oldValues[i] != null) {
                    put(oldKeys[i], oldValues[i]);
                }
            }
        }

        private static int mix(int key) {
            int h = key * 0x9E3779B9;
            return h ^ (h >>> 16);
        }
    }
}
