package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.Srq;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One pool of registered receive buffers that many connections of one {@link Rdma} receive
 * their messages in ({@code ibv_srq} on verbs): thousands of connections need one pool sized for
 * the traffic that arrives at once, not a queue of buffers each. Made by {@link
 * Rdma#sharedReceiveQueue(int, int, int)}; a connection uses it when its {@link ConnectionConfig}
 * names it ({@link ConnectionConfig.Builder#sharedReceiveQueue}).
 *
 * <p>A message arrives as on a connection of its own ({@link Connection#receive()}, {@link
 * Connection#onReceive}), in a buffer of this pool; closing the {@link Message} posts that buffer
 * again, for any connection's next message. A message held open keeps its buffer out of the pool:
 * with every buffer held, every sender meets a receiver-not-ready wait. {@link #onLowWater} says
 * when fewer than a limit are posted (the device's SRQ limit event), so that the application can
 * close messages faster or {@linkplain #addBuffers add buffers}.
 *
 * <p>Which connection's message takes which buffer is the device's choice; ordering holds per
 * connection only. A message larger than {@link #bufferSize()} fails the connection it came on,
 * as on a queue of its own (the peer is told the size at connect).
 *
 * <p><b>What a shared pool promises.</b> On tcp and shm ({@link #enforcesFairShare()}), no
 * connection can take the whole pool: while no more than the {@linkplain #fairShare reserve}
 * are posted, a connection holding its fair share or more (buffers of messages not yet closed,
 * and the one its next message is landing in) is given none of them; its next message waits, as
 * for a receiver not ready, until it closes one of its messages or the pool refills, and fails
 * with {@code RNR_RETRY_EXC_ERR} past its sender's RNR retries. So a connection whose messages are
 * closed as they come always finds a buffer, however many another one hoards. By default the
 * share is 1 buffer and the reserve an eighth of the buffers it was made with (at least 1). It does
 * not promise equal shares above the reserve (a busy connection may use any buffer posted), nor
 * a buffer for more connections at once than the reserve holds. On verbs the pool is the NIC's
 * ({@code ibv_srq}): the NIC hands buffers out first come, first served, and nothing here can hold
 * one connection back; size the pool and close messages promptly, and use {@link #onLowWater} to
 * see it running low.
 *
 * <p>Threads: every method is safe from any thread. Close it after the connections that use it
 * (the {@link Rdma}'s close closes it last).
 */
public final class SharedReceiveQueue implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    private final Rdma rdma;
    private final Device device;
    private final int bufferSize;
    private final int capacity;
    private final Srq queue;
    /** Each buffer's memory (bufferSize bytes) and key, by index; filled as buffers are added. */
    private final MemorySegment[] buffer;
    private final int[] lkey;
    /** Per buffer, the view of its last message (see {@link #received}); guarded by `this`. */
    private final MemorySegment[] views;
    // The chunks of buffers added, each one allocation and one registration. Guarded by `this`.
    private final List<Arena> arenas = new ArrayList<>();
    private final List<MemoryRegistration> registrations = new ArrayList<>();
    private volatile int buffers;
    private int posted;        // guarded by `this`
    private int connections;   // guarded by `this`
    private boolean closed;    // guarded by `this`
    private boolean freed;     // guarded by `this`
    /** Messages delivered and not closed: their buffers must outlive a close. Guarded by `this`. */
    private int lent;
    /** The fair share: per connection, and the reserve it applies below (see the class doc). Guarded by `this`. */
    private int fairShare = 1;
    private int reserve;
    private final boolean enforcesFairShare;
    private volatile int lowWaterLimit;
    private volatile Consumer<SharedReceiveQueue> lowWater;
    private final AtomicLong lowWaterEvents = new AtomicLong();

    SharedReceiveQueue(Rdma rdma, Device device, int buffers, int bufferSize, int capacity) {
        if (buffers < 1) {
            throw new IllegalArgumentException("a shared receive queue needs 1 buffer or more, not " + buffers);
        }
        if (bufferSize < 1) {
            throw new IllegalArgumentException("bufferSize must be 1 byte or more, not " + bufferSize);
        }
        if (capacity < buffers || capacity > 1 << 20) {
            throw new IllegalArgumentException("capacity " + capacity + " must be at least buffers (" + buffers
                    + ") and at most " + (1 << 20));
        }
        this.rdma = rdma;
        this.device = device;
        this.bufferSize = bufferSize;
        this.queue = device.createSrq(capacity, this::limitReached);
        this.capacity = capacity;
        this.buffer = new MemorySegment[capacity];
        this.lkey = new int[capacity];
        this.views = new MemorySegment[capacity];
        this.reserve = Math.max(1, buffers / 8);
        this.enforcesFairShare = queue.shareFairly(fairShare, reserve);
        try {
            addBuffers(buffers);
        } catch (RuntimeException e) {
            queue.close();
            registrations.forEach(MemoryRegistration::close);
            free();
            throw e;
        }
    }

    /** {@return the size of each buffer: the largest message a connection using it receives} */
    public int bufferSize() {
        return bufferSize;
    }

    /** {@return the most buffers it can hold ({@link #addBuffers} adds up to it)} */
    public int capacity() {
        return capacity;
    }

    /** {@return its buffers, posted or lent out in a message} */
    public int buffers() {
        return buffers;
    }

    /** {@return buffers posted now: free for the next message of any connection} */
    public synchronized int posted() {
        return posted;
    }

    /** {@return the bytes of its buffers: {@link #buffers()} x {@link #bufferSize()}} */
    public long memoryBytes() {
        return (long) buffers * bufferSize;
    }

    /** {@return connections using it now} */
    public synchronized int connections() {
        return connections;
    }

    /** {@return how often the low-water callback has been called} */
    public long lowWaterEvents() {
        return lowWaterEvents.get();
    }

    /**
     * Calls {@code callback} when a message leaves fewer than {@code limit} buffers posted. The
     * device's limit event is one-shot ({@code IBV_EVENT_SRQ_LIMIT_REACHED}); jrdma arms it again
     * after each call, so that the callback runs once per crossing seen while it is set (not once
     * per message). It runs on the Rdma's first IO thread: keep it short; it may {@link
     * #addBuffers}. {@code limit} 0 and a null callback stop it.
     *
     * @param limit    1 to {@link #capacity()}; 0 to stop
     * @param callback what runs, with this queue; null only with limit 0
     * @throws IllegalArgumentException for a limit out of range, or a null callback with a limit
     * @throws IllegalStateException    when it is closed
     */
    public void onLowWater(int limit, Consumer<SharedReceiveQueue> callback) {
        if (limit < 0 || limit > capacity) {
            throw new IllegalArgumentException("a low-water limit of " + limit + " on a shared receive queue of capacity "
                    + capacity + " (1 to " + capacity + ", or 0 to stop)");
        }
        if ((limit == 0) != (callback == null)) {
            throw new IllegalArgumentException("a low-water limit " + limit + " with " + (callback == null ? "no callback"
                    : "a callback") + ": give a limit with a callback, or 0 with null to stop");
        }
        synchronized (this) {
            checkOpen();
            lowWaterLimit = limit;
            lowWater = callback;
            queue.armLimit(limit);
        }
    }

    /**
     * Sets the fair share (see the class doc): while no more than {@code reserve} buffers are
     * posted, a connection that holds {@code perConnection} or more is given none of them.
     *
     * @param perConnection buffers a connection may hold and still take from the reserve: 1 or more
     * @param reserve       buffers kept for connections holding fewer: 0 (no reserve) to {@link #capacity()}
     * @throws IllegalArgumentException              for a value out of range
     * @throws UnsupportedCapabilityException on verbs, whose NIC hands buffers out itself
     * @throws IllegalStateException                 when it is closed
     */
    public synchronized void fairShare(int perConnection, int reserve) {
        checkOpen();
        if (perConnection < 1 || reserve < 0 || reserve > capacity) {
            throw new IllegalArgumentException("a fair share of " + perConnection + " buffers per connection with a reserve"
                    + " of " + reserve + " on a shared receive queue of capacity " + capacity + " (1 or more; 0 to "
                    + capacity + ")");
        }
        if (!enforcesFairShare) {
            throw new UnsupportedCapabilityException("a fair share of a shared receive queue", device.name(),
                    "its NIC hands the buffers out, first come, first served");
        }
        queue.shareFairly(perConnection, reserve);
        this.fairShare = perConnection;
        this.reserve = reserve;
    }

    /** {@return the buffers a connection may hold and still take from the {@link #reserve()}} */
    public synchronized int fairShare() {
        return fairShare;
    }

    /** {@return the buffers kept for connections that hold fewer than their {@link #fairShare()}} */
    public synchronized int reserve() {
        return reserve;
    }

    /** {@return whether its device holds a connection to its fair share (tcp, shm), or hands buffers out itself (verbs)} */
    public boolean enforcesFairShare() {
        return enforcesFairShare;
    }

    /**
     * Adds {@code count} buffers (one allocation and registration) and posts them.
     *
     * @param count buffers to add, 1 or more
     * @throws IllegalArgumentException when the queue would hold more than {@link #capacity()}
     * @throws IllegalStateException    when it is closed
     */
    public void addBuffers(int count) {
        synchronized (this) {
            checkOpen();
            if (count < 1 || (long) buffers + count > capacity) {
                throw new IllegalArgumentException("adding " + count + " buffers to " + buffers + " would exceed the capacity "
                        + capacity + " of the shared receive queue");
            }
            Arena arena = Arena.ofShared();
            MemoryRegistration r;
            try {
                r = device.register(arena.allocate((long) bufferSize * count, 64), AccessFlags.LOCAL_WRITE);
            } catch (RuntimeException e) {
                arena.close();
                throw e;
            }
            arenas.add(arena);
            registrations.add(r);
            int first = buffers;
            for (int i = 0; i < count; i++) {
                buffer[first + i] = r.memory().asSlice((long) i * bufferSize, bufferSize);
                lkey[first + i] = r.lkey();
            }
            buffers = first + count;
            for (int i = 0; i < count; i++) {
                post(first + i);
            }
        }
    }

    /** Posts buffer {@code i}; under this. */
    private void post(int i) {
        int rc = queue.postRecv(ReceiveQueue.RECV_FLAG | i, buffer[i].address(), bufferSize, lkey[i]);
        if (rc != 0) {
            throw new RdmaException("posting buffer " + i + " to the shared receive queue failed with errno " + rc);
        }
        posted++;
    }

    // ---------------------------------------------------------------- the connections' side

    /** A connection starts using it; the provider's queue for its QP. */
    synchronized Srq join() {
        checkOpen();
        connections++;
        return queue;
    }

    /** A connection using it is released. */
    synchronized void leave() {
        connections--;
    }

    Rdma rdma() {
        return rdma;
    }

    /** A receive completed on a connection: the first {@code length} bytes of buffer {@code i}, lent out. */
    MemorySegment received(int i, int length) {
        MemorySegment d;
        synchronized (this) {
            posted--;
            // The view made for the buffer's last message, when it had the same length: no slice
            // per message when sizes repeat (measured: 40 B a message without it). Under the lock:
            // the buffer's next message may complete on another connection's thread.
            d = views[i];
            if (d == null || d.byteSize() != length) {
                views[i] = d = buffer[i].asSlice(0, length);
            }
            lent++;
        }
        return d;
    }

    /** A receive of buffer {@code i} failed (flushed, too long): it is free again. */
    void failed(int i) {
        synchronized (this) {
            posted--;
            if (!closed) {
                post(i);
            }
        }
    }

    /** A message in buffer {@code i} was closed: post it again. */
    void repost(int i) {
        boolean free;
        synchronized (this) {
            if (!closed) {
                post(i);
            }
            free = --lent == 0 && closed;
        }
        if (free) {
            free();
        }
    }

    /** The device's limit event (a provider thread): the callback runs on IO thread 0, then the limit is armed again. */
    private void limitReached() {
        lowWaterEvents.incrementAndGet();
        try {
            rdma.io().execute(this::runLowWater);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "low-water event of a shared receive queue after its Rdma closed", e);
        }
    }

    private void runLowWater() {
        Consumer<SharedReceiveQueue> cb = lowWater;
        if (cb == null) {
            return;
        }
        try {
            cb.accept(this);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the low-water callback of " + this + " threw", e);
        }
        synchronized (this) {
            if (!closed && lowWater != null) {
                queue.armLimit(lowWaterLimit);
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this shared receive queue is closed");
        }
    }

    /**
     * Destroys the queue and deregisters its buffers; their memory goes once every message lent
     * out of it is closed. Idempotent.
     *
     * @throws IllegalStateException while connections still use it (close them first)
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (connections > 0) {
                throw new IllegalStateException("cannot close a shared receive queue that " + connections
                        + " connection(s) still use; close them first");
            }
            closed = true;
            lowWater = null;
            queue.close();
            for (MemoryRegistration r : registrations) {
                r.close();
            }
        }
        rdma.live().sharedReceiveQueueClosed(this);
        boolean none;
        synchronized (this) {
            none = lent == 0;
        }
        if (none) {
            free();
        }
    }

    /** The Rdma closes: whatever is still lent goes too (as a connection's buffers do). */
    void closeWithRdma() {
        synchronized (this) {
            connections = 0;
        }
        close();
        free();
    }

    private synchronized void free() {
        if (!freed) {
            freed = true;
            for (Arena a : arenas) {
                a.close();
            }
        }
    }

    @Override
    public synchronized String toString() {
        return "SharedReceiveQueue[" + buffers + " x " + bufferSize + " B, " + posted + " posted, " + connections
                + " connections" + (closed ? ", closed" : "") + "]";
    }
}
