package dev.jrdma;

import dev.jrdma.os.LibC;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.WorkCompletionException;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

/**
 * A connection's receive side: its registered receive buffers, all posted from the start; the
 * delivery of what arrives in them (to the {@code onReceive} callback, to a waiting
 * {@code receive()}, or kept until one asks) as {@link Message}s; and the re-post of a buffer
 * when its message is closed. A message's buffer outlives the connection until it is closed.
 * With a {@link SharedReceiveQueue} the buffers are the shared queue's: nothing is posted here, a
 * receive completion names a shared buffer, and a closed message posts it back to the shared queue.
 */
final class ReceiveQueue {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /** Marks a receive's wr_id (a send's is its slot). */
    static final long RECV_FLAG = 1L << 62;

    private final Connection connection;
    private final ConnectionLife life;
    private final ConnectionCounters counters;
    private final Object postLock;
    /** Single-threaded: the owner is the only thread here, so no lock and no atomic step (see SendQueue). */
    private final boolean confined;
    private final int depth;
    private final int bufferSize;
    /** The shared queue the messages arrive in, or null for buffers of this connection's own. */
    private final SharedReceiveQueue shared;
    /** The provider's queue of {@link #shared}, once joined (the QP is created with it). */
    private Srq sharedQueue;
    private QueuePair qp;
    private Arena memory;   // guarded by this once released
    private MemoryRegistration registration;
    private int posted;     // under postLock
    /** Messages delivered and not yet closed: their buffers must outlive a release. */
    private final AtomicInteger lent = new AtomicInteger();
    private volatile boolean freeWanted;

    // Received messages nobody took yet, and receive() calls waiting for one. Guarded by `waiting`.
    private final ArrayDeque<Message> undelivered = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Message>> waiting = new ArrayDeque<>();
    private volatile BiConsumer<Connection, Message> onReceive;
    /** The message object callbacks are handed, reused message after message (on the IO thread). */
    private Message reusable;
    /** A callback holds {@link #reusable}: a delivery meanwhile takes a new object. */
    private boolean lending;
    /** Per receive buffer, the view of its last message (see {@link #view}); on the IO thread. */
    private MemorySegment[] views;

    ReceiveQueue(Connection connection, ConnectionLife life, Object postLock, ConnectionConfig config,
                 ConnectionCounters counters) {
        this.counters = counters;
        this.connection = connection;
        this.life = life;
        this.postLock = postLock;
        this.confined = connection.io.isConfined();
        this.depth = config.receiveQueueDepth();
        this.bufferSize = config.receiveBufferSize();
        this.shared = config.sharedReceiveQueue();
    }

    /** Registers the buffers (or joins the shared queue); before the QP exists. */
    void prepare(Device device) {
        if (shared != null) {
            sharedQueue = shared.join();
            return;
        }
        memory = Arena.ofShared();
        // Mapped, not allocated: a buffer's pages become resident only when a message lands in
        // them, so a connection that receives little (or nothing: an idle one) costs little.
        MemorySegment buffers = LibC.mapAnonymous((long) bufferSize * depth, memory);
        registration = device.register(buffers, AccessFlags.LOCAL_WRITE);
    }

    /** The QP exists (INIT): post every receive, before the peer can send. */
    void attach(QueuePair qp) {
        this.qp = qp;
        if (shared != null) {
            return;   // the shared queue's receives are posted already
        }
        synchronized (postLock) {
            for (int i = 0; i < depth; i++) {
                post(i);
            }
        }
    }

    private void post(int buffer) {
        int rc = qp.postRecv(RECV_FLAG | buffer, registration.memory().address() + (long) buffer * bufferSize, bufferSize,
                registration.lkey());
        if (rc != 0) {
            throw new RdmaException("ibv_post_recv failed with errno " + rc + " on the connection to " + life.remoteAddress());
        }
        posted++;
    }

    /** No receive is posted any more; under postLock. */
    boolean drained() {
        return posted == 0;
    }

    /** The provider's shared receive queue the QP is created with, or null. */
    Srq sharedQueue() {
        return sharedQueue;
    }

    /** A receive completed (on the completing thread): deliver its message, or fail the connection. */
    void onCompletion(int buffer, int status, int opcode, int byteLen, int imm, boolean withImm) {
        if (shared != null) {
            if (status != WorkCompletion.SUCCESS) {
                shared.failed(buffer);   // the buffer is the shared queue's again
            }
        } else if (confined) {
            posted--;
        } else {
            synchronized (postLock) {
                posted--;
            }
        }
        if (status != WorkCompletion.SUCCESS) {
            if (status != WorkCompletion.WR_FLUSH_ERR) {
                counters.receiveFailed(status);
                life.markError(new WorkCompletionException("receive on the connection to " + life.remoteAddress(),
                        WorkCompletion.statusName(status)));
            } else if (life.failure() == null) {   // flushed: the QP's failure is elsewhere, maybe still to come
                life.markFlushed(new WorkCompletionException("receive on the connection to " + life.remoteAddress(),
                        WorkCompletion.statusName(status)));
            }
            return;
        }
        boolean write = opcode == WorkCompletion.OP_RECV_RDMA_WITH_IMM;
        counters.received(write ? 0 : byteLen);
        MemorySegment data = shared != null ? shared.received(buffer, write ? 0 : byteLen) : view(buffer, write ? 0 : byteLen);
        if (shared == null) {   // (the shared queue counts what it lends itself)
            if (confined) {
                lent.setPlain(lent.getPlain() + 1);
            } else {
                lent.incrementAndGet();
            }
        }
        BiConsumer<Connection, Message> cb = onReceive;
        if (cb != null && !lending) {
            // A callback's message is closed when it returns: the next one can be the same object.
            Message m = reusable == null ? reusable = new Message(connection, buffer, data, byteLen, withImm, imm, write)
                    : reusable.reuse(buffer, data, byteLen, withImm, imm, write);
            lending = true;
            try {
                deliver(m, cb);
            } finally {
                lending = false;
            }
        } else {
            // Kept for receive(); or delivered while a callback holds the reused object, which
            // cannot happen today (passes do not nest), and must not hand it over twice if it did.
            deliver(new Message(connection, buffer, data, byteLen, withImm, imm, write), cb);
        }
    }

    /**
     * Buffer {@code buffer}'s first {@code length} bytes: the view made for its last message when
     * that had the same length (no slice per message when sizes repeat), else a new one.
     */
    private MemorySegment view(int buffer, int length) {
        MemorySegment[] v = views;
        if (v == null) {
            views = v = new MemorySegment[depth];
        }
        MemorySegment d = v[buffer];
        if (d == null || d.byteSize() != length) {
            v[buffer] = d = registration.memory().asSlice((long) buffer * bufferSize, length);
        }
        return d;
    }

    private void deliver(Message m) {
        deliver(m, onReceive);
    }

    private void deliver(Message m, BiConsumer<Connection, Message> cb) {
        if (cb != null) {
            try (m) {
                cb.accept(connection.handle(), m);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "onReceive callback of the connection to " + life.remoteAddress()
                        + " threw", e);
            }
            return;
        }
        CompletableFuture<Message> f;
        synchronized (waiting) {
            f = waiting.poll();
            if (f == null) {
                undelivered.add(m);
                return;
            }
        }
        f.complete(m);
    }

    /**
     * Every message from now on goes to {@code callback}; those kept so far first (on the IO
     * thread). Null: from now on they go to {@code receive()} again.
     */
    void onReceive(BiConsumer<Connection, Message> callback) {
        onReceive = callback;
        if (callback != null) {
            connection.io.execute(this::drainUndeliveredToCallback);
        }
    }

    private void drainUndeliveredToCallback() {
        while (onReceive != null) {
            Message m;
            synchronized (waiting) {
                m = undelivered.poll();
            }
            if (m == null) {
                return;
            }
            deliver(m);
        }
    }

    /** The next message: one kept, or the next to arrive; fails once the connection has failed. */
    CompletableFuture<Message> receive() {
        CompletableFuture<Message> f = new CompletableFuture<>();
        Message m;
        synchronized (waiting) {
            m = undelivered.poll();
            if (m == null) {
                RdmaException why = life.failure();
                if (why != null) {
                    f.completeExceptionally(ConnectionLife.closedBecause(why));
                    return f;
                }
                waiting.add(f);
                return f;
            }
        }
        f.complete(m);
        return f;
    }

    /** Fails every waiting {@code receive()}. */
    void failReceivers(RdmaException e) {
        List<CompletableFuture<Message>> list;
        synchronized (waiting) {
            list = new ArrayList<>(waiting);
            waiting.clear();
        }
        ConnectionClosedException closed = ConnectionLife.closedBecause(e);
        for (CompletableFuture<Message> f : list) {
            f.completeExceptionally(closed);
        }
    }

    /** A message's buffer is free again: post it, unless the connection is going down. */
    void repost(int buffer) {
        if (shared != null) {
            shared.repost(buffer);
            return;
        }
        int left;
        if (confined) {
            connection.io.checkOwner("Message.close");
            if (life.state() == ConnectionState.ESTABLISHED) {
                post(buffer);
            }
            left = lent.getPlain() - 1;
            lent.setPlain(left);
        } else {
            synchronized (postLock) {
                if (life.state() == ConnectionState.ESTABLISHED) {
                    post(buffer);
                }
            }
            left = lent.decrementAndGet();
        }
        if (left == 0 && freeWanted) {
            freeMemory();
        }
    }

    /**
     * The connection is released: the registration goes now; the buffers once no message is lent
     * out. Returns true when they are freed already.
     */
    boolean release() {
        if (shared != null) {
            if (sharedQueue != null) {
                sharedQueue = null;
                shared.leave();
            }
            return true;   // its buffers are the shared queue's
        }
        if (registration != null) {
            registration.close();
        }
        freeWanted = true;
        if (lent.get() == 0) {
            freeMemory();
            return true;
        }
        return false;
    }

    /**
     * Frees the receive buffers, once the connection is released and no message is lent out (a
     * {@link Message}'s data stays valid until it is closed, also when the connection ends
     * first), or when the Rdma closes. Idempotent.
     */
    synchronized void freeMemory() {
        if (memory != null) {
            memory.close();
            memory = null;
            connection.rdma().live().memoryFreed(connection);
        }
    }
}
