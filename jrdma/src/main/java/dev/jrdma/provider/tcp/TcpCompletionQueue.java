package dev.jrdma.provider.tcp;

import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;

import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A tcp completion queue. There is no device to make progress on its own, so polling is what
 * moves data: {@link #poll} lets each queue pair on this CQ read and apply what its socket
 * has, and write what waits, and hands the completions that produced to the sink. Completions
 * are kept in a ring that only the polling thread touches.
 */
final class TcpCompletionQueue implements CompletionQueue {
    final TcpCompletionChannel channel;
    private final CopyOnWriteArrayList<TcpQueuePair> queuePairs = new CopyOnWriteArrayList<>();
    private long[] wrId;
    private int[] status, opcode, byteLen, imm;
    private boolean[] withImm;
    private int head, count;
    /** Frames its queue pairs ended (applied, parked, or read as responses) in this {@link #poll}; on the polling thread. */
    int served;
    /**
     * The polling thread armed (about to sleep). Cleared by whoever wakes it, not by the thread:
     * it polls once more after arming, and clearing the flag then would lose the wake-up of a
     * completion that comes between that look and the sleep.
     */
    private volatile boolean armed;
    /**
     * At rest ({@link #rest}): its IO thread does not poll it until {@link #activate} (a ready
     * socket, a post, an error) takes the flag back and runs {@link #waker}. Set by the polling
     * thread, taken back by whoever wakes it, with a compare-and-set: one wake per rest.
     */
    private volatile boolean resting;
    private static final java.lang.invoke.VarHandle RESTING;

    static {
        try {
            RESTING = java.lang.invoke.MethodHandles.lookup().findVarHandle(TcpCompletionQueue.class, "resting", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** What wakes the owner of a resting queue (its IO thread's source); written before {@link #resting}. */
    private Runnable waker;
    /**
     * Polls in a row that found nothing: a queue rests only after {@value #QUIET_POLLS_BEFORE_REST},
     * so that one between the operations of a busy exchange is not put to rest and woken each time.
     */
    private int quietPolls;
    static final int QUIET_POLLS_BEFORE_REST = 32;
    /** Completion queues of this process at rest now (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicInteger AT_REST = new java.util.concurrent.atomic.AtomicInteger();

    TcpCompletionQueue(int depth, TcpCompletionChannel channel) {
        this.channel = channel;
        allocate(Math.max(16, Integer.highestOneBit(Math.max(1, depth - 1)) << 1));
    }

    private void allocate(int capacity) {
        long[] w = new long[capacity];
        int[] s = new int[capacity], o = new int[capacity], b = new int[capacity], im = new int[capacity];
        boolean[] wi = new boolean[capacity];
        for (int i = 0; i < count; i++) {
            int from = (head + i) & (wrId.length - 1);
            w[i] = wrId[from];
            s[i] = status[from];
            o[i] = opcode[from];
            b[i] = byteLen[from];
            im[i] = imm[from];
            wi[i] = withImm[from];
        }
        wrId = w;
        status = s;
        opcode = o;
        byteLen = b;
        imm = im;
        withImm = wi;
        head = 0;
    }

    void attach(TcpQueuePair qp) {
        queuePairs.add(qp);
    }

    void detach(TcpQueuePair qp) {
        queuePairs.remove(qp);
    }

    /** Adds a completion; on the polling thread (a QP's progress, inside {@link #poll}). */
    void add(long id, int st, int op, int len, int immediate, boolean hasImm) {
        if (count == wrId.length) {
            allocate(wrId.length * 2);
        }
        int i = (head + count) & (wrId.length - 1);
        wrId[i] = id;
        status[i] = st;
        opcode[i] = op;
        byteLen[i] = len;
        imm[i] = immediate;
        withImm[i] = hasImm;
        count++;
    }

    @Override
    public int poll(CompletionSink sink, int max) {
        if (count == 0) {
            for (int i = 0, n = queuePairs.size(); i < n; i++) {
                TcpQueuePair qp = queuePairs.get(i);
                try {
                    qp.progress();
                } catch (Throwable t) {
                    // The exception barrier: one connection's failure (a bug, or bytes of its peer's
                    // that got past a check) costs that connection, never the IO thread or the others.
                    qp.failInternally(t);
                }
            }
        }
        int n = 0;
        while (n < max && count > 0) {
            int i = head;
            head = (head + 1) & (wrId.length - 1);
            count--;
            n++;
            sink.onCompletion(wrId[i], status[i], opcode[i], byteLen[i], imm[i], withImm[i]);
        }
        int work = n + served;
        served = 0;
        quietPolls = work == 0 ? quietPolls + 1 : 0;
        return work;
    }

    /**
     * Rests when nothing is to be done here until a socket of its queue pairs is ready or
     * something is posted: each queue pair armed as for a sleep (its ACK sent, its ring asked to
     * ring) and then found with nothing outstanding, nothing to send, nothing parked and no timer
     * running ({@link TcpQueuePair#mayRest}). Only where its thread may sleep: a polling-only
     * channel has no wake-up, and its direct operations skip the fence a wake needs.
     */
    @Override
    public boolean rest(Runnable wake) {
        if (channel == null || !channel.sleepers() || count > 0 || quietPolls < QUIET_POLLS_BEFORE_REST) {
            return false;
        }
        waker = wake;
        channel.resting.incrementAndGet();
        AT_REST.incrementAndGet();
        // Resting first, then the look: a poster publishes its work, fences and reads resting;
        // so either it sees this flag (and wakes us) or the look below sees its work.
        resting = true;
        for (int i = 0, n = queuePairs.size(); i < n; i++) {
            if (!queuePairs.get(i).mayRest()) {
                if (RESTING.compareAndSet(this, true, false)) {
                    channel.resting.decrementAndGet();
                    AT_REST.decrementAndGet();
                }   // else someone woke it meanwhile: that wake is for a source still polled, and ignored
                return false;
            }
        }
        return true;
    }

    /** Takes a resting queue back into its IO thread's passes; true when it was resting. Any thread. */
    boolean activate() {
        if (resting && RESTING.compareAndSet(this, true, false)) {
            channel.resting.decrementAndGet();
            AT_REST.decrementAndGet();
            waker.run();
            return true;
        }
        return false;
    }

    /**
     * Something was posted to one of its queue pairs (its entry already published): a resting
     * queue must be polled again, for its answer's timers if not for a completion of its own.
     * The full fence orders the publication before the read of {@link #resting} (see {@link #rest}).
     */
    void wakeIfResting() {
        if (channel == null || !channel.sleepers()) {
            return;
        }
        java.lang.invoke.VarHandle.fullFence();
        activate();
    }

    /** A queue pair has work made without socket activity (an error, a receive for a parked SEND): poll it soon. */
    void wake() {
        if (channel != null) {
            activate();
            channel.wake();
        }
    }

    @Override
    public void arm() {
        // Level-triggered: the channel's fd is readable while there is anything to do. What must
        // not wait for a next pass goes out now: the thread is about to sleep.
        armed = true;
        for (int i = 0, n = queuePairs.size(); i < n; i++) {
            queuePairs.get(i).flushAck();
            queuePairs.get(i).armRing();
        }
    }

    /**
     * A completion became ready without socket activity (an operation done on a shared mapping,
     * its entry published with a release store): wake the polling thread if it armed to sleep.
     * The full fence orders that publication before the read of armed, as the poller sets armed
     * (volatile) before it polls once more; so either the poller sees the entry or this sees
     * armed. A channel no thread sleeps on needs neither (a fence is most of a direct write's
     * cost after its copy).
     */
    void wakeIfAsleep() {
        if (channel == null || !channel.sleepers()) {
            return;
        }
        java.lang.invoke.VarHandle.fullFence();
        activate();
        if (armed) {
            armed = false;
            channel.wake();
        }
    }

    @Override
    public void close() {
        queuePairs.clear();
        if (resting && RESTING.compareAndSet(this, true, false)) {   // closed at rest: no longer counted
            channel.resting.decrementAndGet();
            AT_REST.decrementAndGet();
        }
    }
}
