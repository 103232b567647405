package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.os.AddressSpace;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.MemoryWindow;
import dev.jrdma.spi.QueuePair;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * Posting to a connection's send queue: every operation, single, batched or an emulated atomic's
 * next attempt, goes through here, serialised by {@link #postLock} (the monitor the provider's
 * queue pair is posted under, {@code QueuePairOwner.postMonitor}). An operation takes a slot
 * ({@link SendSlots}), whose record says whom to tell; its wr_id is the slot. Atomics land their
 * prior value in the slot's 8-byte scratch word.
 */
final class SendQueue {
    final Object postLock = new Object();
    final SendSlots slots;
    private final ConnectionLife life;
    private final ConnectionConfig config;
    private final IoThread io;
    private final ConnectionCounters counters;
    /**
     * Single-threaded ({@code Rdma.Builder.singleThreaded}): only the owner posts and completes,
     * so the posts take no lock (the rest, teardown and the marker, still do: it costs nothing
     * there and keeps one code path).
     */
    private final boolean confined;
    private QueuePair qp;
    /** The device flushes ({@code WR_FLUSH}); else a flush is a 1-byte read after the writes. */
    private boolean nativeFlush;
    private Arena memory;
    private MemoryRegistration scratchMr;
    private long scratchBase;
    // ON_ERROR operations go unsignaled, but one in every signalEvery is signaled (its completion
    // told to nobody), so that slots and the device's send queue are reclaimed. Under postLock.
    private final int signalEvery;
    private int unsignaledRun;
    /** The last request posted was unsignaled: nothing will report it, so a teardown needs the marker. */
    private boolean tailUnsignaled;
    /** Operations posted, for the latency sampling; under postLock. */
    private int postTick;

    SendQueue(ConnectionLife life, ConnectionConfig config, IoThread io, ConnectionCounters counters) {
        this.counters = counters;
        this.life = life;
        this.config = config;
        this.io = io;
        this.confined = io.isConfined();
        this.slots = new SendSlots(config.sendQueueDepth(), postLock);
        this.signalEvery = Math.max(1, config.sendQueueDepth() / 4);
    }

    /** Registers the scratch words of atomics; before the QP exists. */
    void prepare(Device device) {
        nativeFlush = device.flushes();
        memory = Arena.ofShared();
        MemorySegment scratch = memory.allocate(8L * (slots.depth() + 1), 8);
        scratchMr = device.register(scratch, AccessFlags.LOCAL_WRITE);
        scratchBase = scratch.address();
    }

    void attach(QueuePair qp) {
        this.qp = qp;
    }

    /** The 8-byte value the atomic of {@code o} returned. */
    long valueOf(SendOperation o) {
        return AddressSpace.getLong(scratch(o));   // read on completion, before close frees the words
    }

    /**
     * Posts one operation (see {@link Operation} for what {@code a..d} are); {@code kind} and
     * {@code completion} say whom to tell. Bad input and a connection that is not usable throw
     * here, and nothing is posted. Returns true when the provider carried the operation out during
     * the call and nobody is told ({@link SendOperation#ON_ERROR}, or
     * {@link SendOperation#HANDLER_UNLESS_DONE}, which is otherwise a {@link SendOperation#VOID_HANDLER}).
     */
    boolean post(Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b, long c, long d, byte kind,
              Object completion, Object attachment) {
        OperationChecks.check(op, buf, remote, life.peer());
        life.checkUsable(op.label);
        if (confined) {
            io.checkOwner(op.label);
            // Done during the call where the provider can (shm's mapped peer region): no slot, no
            // hold (the region cannot be closed meanwhile: only this thread closes it), no report.
            if ((kind == SendOperation.ON_ERROR || kind == SendOperation.HANDLER_UNLESS_DONE)
                    && (op == Operation.WRITE || op == Operation.READ)
                    && qp.postNow(0, op.wire, 0, buf.address(), (int) buf.length(), buf.lkey(), remote.address(),
                    remote.rkey()) == QueuePair.DONE) {
                counters.completedAtPost(op, buf.length());
                return true;
            }
        }
        if (kind == SendOperation.HANDLER_UNLESS_DONE) {
            kind = SendOperation.VOID_HANDLER;   // not done during the call: its handler is told, later
        }
        RegionResources local = buf == null ? null : hold(op, buf);
        boolean posted = false;
        try {
            if (confined) {
                postOperation(op, buf, remote, imm, a, b, c, d, kind, completion, attachment, local);
            } else {
                synchronized (postLock) {
                    postOperation(op, buf, remote, imm, a, b, c, d, kind, completion, attachment, local);
                }
            }
            posted = true;
        } finally {
            if (!posted && local != null) {
                local.releaseFromOperation();
            }
        }
        return false;
    }

    /** Takes a slot for {@code op} and posts it; under postLock, or on the owner of a single-threaded connection. */
    private void postOperation(Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b, long c, long d,
                               byte kind, Object completion, Object attachment, RegionResources local) {
        awaitRoom(1, op.label);
        SendOperation o = slots.take(op, kind, completion, attachment);
        o.local = local;
        stamp(o, op, buf);
        postBody(o, op, buf, remote, imm, a, b, c, d);
    }

    /** Notes what {@code o} moves and, for one operation in LATENCY_SAMPLE_EVERY, when it was posted. */
    private void stamp(SendOperation o, Operation op, LocalRegion buf) {
        o.length = buf != null ? buf.length() : op.atomic ? 8 : 0;
        o.postedAt = ConnectionCounters.sampled(++postTick) ? System.nanoTime() : 0;
    }

    /**
     * Holds {@code buf}'s memory for an operation: it is not given back, nor its registration
     * dropped, until the operation ends, even when the region is closed meanwhile.
     */
    private static RegionResources hold(Operation op, LocalRegion buf) {
        RegionResources r = buf.resources();
        if (!r.acquireForOperation()) {
            throw new IllegalArgumentException(op.label + ": the local region is closed");
        }
        return r;
    }

    /** The work request(s) of {@code o}, by its operation's shape; under postLock. */
    private void postBody(SendOperation o, Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b,
                          long c, long d) {
        switch (op.shape) {
            case MESSAGE, TRANSFER -> postOne(o, op.wire, buf.address(), (int) buf.length(), buf.lkey(), remote, a, b, imm);
            case ATOMIC -> postOne(o, op.wire, scratch(o), 8, scratchMr.lkey(), remote, a, b, 0);
            case EMULATED -> {
                o.a = a;
                o.b = b;
                o.c = c;
                o.d = d;
                o.remote = remote;
                o.deadline = life.nanoTime() + config.timeout().toNanos();
                o.expected = 0;   // the first attempt assumes the word is 0
                postOne(o, op.wire, scratch(o), 8, scratchMr.lkey(), remote, 0, MaskedAtomics.next(op, 0, a, b, c, d), 0);
            }
            case WINDOW -> throw new IllegalStateException(op.label + " is posted by bindWindow");
            case FLUSH -> {
                if (nativeFlush) {
                    postOne(o, QueuePair.WR_FLUSH, 0, 0, 0, remote, a, remote.length(), 0);
                } else {
                    postOne(o, QueuePair.WR_RDMA_READ, scratch(o), remote.length() == 0 ? 0 : 1, scratchMr.lkey(),
                            remote, 0, 0, 0);
                }
            }
        }
    }

    /**
     * Binds type 2 memory window {@code window} on this queue pair over {@code [addr, addr +
     * length)} of {@code registration} with {@code access}, under its next key, and returns that
     * key: only this queue pair's peer can use it. The bind is posted, not waited for: RC runs the
     * send queue in order, so anything posted after it here (the descriptor's message) reaches the
     * peer after the window took effect; a bind that fails errs the queue pair, and so the
     * connection, with its status named. Its future says when it was done.
     */
    int bindWindow(MemoryWindow window, MemoryRegistration registration, long addr, long length, int access,
                   CompletableFuture<Void> done) {
        Operation op = Operation.BIND_WINDOW;
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(op.label + ": a window of " + length + " bytes is more than one carries (2^31-1)");
        }
        life.checkUsable(op.label);
        if (confined) {
            io.checkOwner(op.label);
            return postWindow(window, registration, addr, (int) length, access, done);
        }
        synchronized (postLock) {
            return postWindow(window, registration, addr, (int) length, access, done);
        }
    }

    private int postWindow(MemoryWindow window, MemoryRegistration registration, long addr, int length, int access,
                           CompletableFuture<Void> done) {
        Operation op = Operation.BIND_WINDOW;
        awaitRoom(1, op.label);
        SendOperation o = slots.take(op, SendOperation.VOID_FUTURE, done, null);
        o.length = length;
        o.postedAt = 0;
        int rkey = window.nextRkey();
        slots.push(o);
        int rc = qp.postSend(o.slot, op.wire, QueuePair.SEND_SIGNALED, addr, length, 0, window.handle(), rkey,
                registration.handle(), access, 0);
        if (rc != 0) {
            slots.popTail();
            slots.untake(o);
            throw new RdmaException(op.label + ": ibv_post_send of the window's bind failed with errno " + rc
                    + " (the QP is " + QueuePair.stateName(qp.queryState()) + ")");
        }
        window.bound(rkey);
        signaled();
        return rkey;
    }

    /**
     * The next attempt of the emulated atomic {@code o}, whose compare-and-swap returned
     * {@code seen}, goes out on the same slot. Returns null when it was posted, else why the
     * operation failed (its time is up, the connection is not usable, or the post failed).
     */
    RdmaException postNextAttempt(SendOperation o, long seen) {
        if (confined) {
            return postAttempt(o, seen);   // on the owner, the only poster
        }
        synchronized (postLock) {   // it posts: serialised with the posters
            return postAttempt(o, seen);
        }
    }

    /** {@link #postNextAttempt}'s post; under postLock, or on the owner of a single-threaded connection. */
    private RdmaException postAttempt(SendOperation o, long seen) {
        String op = o.op.label;
        if (life.nanoTime() > o.deadline) {
            return new RdmaTimeoutException(op + " on the connection to " + life.remoteAddress()
                    + " gave up: the word kept changing under its compare-and-swap for " + config.timeout());
        }
        if (life.state() != ConnectionState.ESTABLISHED) {
            return life.notUsable(op);
        }
        RemoteRegion remote = o.remote;
        o.expected = seen;
        slots.push(o);
        int rc = qp.postSend(o.slot, QueuePair.WR_ATOMIC_CMP_AND_SWP, QueuePair.SEND_SIGNALED, scratch(o), 8,
                scratchMr.lkey(), remote.address(), remote.rkey(), seen,
                MaskedAtomics.next(o.op, seen, o.a, o.b, o.c, o.d), 0);
        if (rc != 0) {
            slots.popTail();
            return new RdmaException(op + ": ibv_post_send failed with errno " + rc);
        }
        signaled();
        return null;
    }

    /**
     * Posts a batch: all its slots are taken at once, every request but the last is unsignaled,
     * and the chain goes to the device in one call. In RC the send queue completes in order, so
     * the last one's completion tells that all before it are done (see {@link CompletionDispatch}).
     */
    void submit(Batch b, BatchCompletion bc) {
        int n = b.size();
        if (n == 0) {
            bc.finish(null);
            return;
        }
        if (n > slots.depth()) {
            throw new IllegalArgumentException("a batch of " + n + " operations does not fit the send queue of "
                    + slots.depth() + " (ConnectionConfig.sendQueueDepth): split it");
        }
        for (int i = 0; i < n; i++) {
            OperationChecks.check(b.op[i], b.local[i], b.remote[i], life.peer());
        }
        life.checkUsable("batch");
        if (confined) {
            io.checkOwner("batch");
        }
        RegionResources[] held = holdAll(b, n);
        boolean handedOver = false;
        try {
            if (confined) {
                awaitRoom(n, "batch");
                handedOver = true;
                postChain(b, bc, n, held);
            } else {
                synchronized (postLock) {
                    awaitRoom(n, "batch");
                    handedOver = true;   // from here each member's record holds its region
                    postChain(b, bc, n, held);
                }
            }
        } finally {
            if (!handedOver) {
                releaseAll(held, n);
            }
        }
    }

    private static RegionResources[] holdAll(Batch b, int n) {
        RegionResources[] held = new RegionResources[n];
        for (int i = 0; i < n; i++) {
            if (b.local[i] != null) {
                try {
                    held[i] = hold(b.op[i], b.local[i]);
                } catch (RuntimeException e) {
                    releaseAll(held, i);
                    throw e;
                }
            }
        }
        return held;
    }

    private static void releaseAll(RegionResources[] held, int n) {
        for (int i = 0; i < n; i++) {
            if (held[i] != null) {
                held[i].releaseFromOperation();
            }
        }
    }

    /** Stages the batch's members on their slots and posts them as one chain; under postLock, with room for all. */
    private void postChain(Batch b, BatchCompletion bc, int n, RegionResources[] held) {
        for (int i = 0; i < n; i++) {
            Operation op = b.op[i];
            SendOperation o = slots.take(op, SendOperation.BATCH_MEMBER, bc, null);
            o.batchIndex = i;
            o.local = held[i];
            LocalRegion buf = b.local[i];
            stamp(o, op, buf);
            RemoteRegion remote = b.remote[i];
            qp.stage(i, o.slot, op.wire, i == n - 1 ? QueuePair.SEND_SIGNALED : 0,
                    op.atomic ? scratch(o) : buf.address(), op.atomic ? 8 : (int) buf.length(),
                    op.atomic ? scratchMr.lkey() : buf.lkey(), remote == null ? 0 : remote.address(),
                    remote == null ? 0 : remote.rkey(), b.compareAdd[i], b.swap[i], b.imm[i]);
            slots.push(o);
        }
        int rc = qp.postStaged(n);
        if (rc != 0) {
            failUnposted(b, bc, n, rc);
        } else {
            signaled();
        }
    }

    /**
     * The device took only the batch's first {@code qp.firstUnposted()} requests: the others leave
     * the ring (they were pushed last) and fail now; those posted complete as usual. An unsignaled
     * tail would never be reported, so then the connection is put in error, which flushes them.
     */
    private void failUnposted(Batch b, BatchCompletion bc, int n, int rc) {
        int posted = qp.firstUnposted();
        RdmaException e = new RdmaException("batch: ibv_post_send failed with errno " + rc + " at operation "
                + posted + " of " + n + " (" + b.op[posted].label + "; the QP is "
                + QueuePair.stateName(qp.queryState()) + ")");
        for (int i = n - 1; i >= posted; i--) {
            SendOperation o = slots.popTail();
            if (o.local != null) {
                o.local.releaseFromOperation();
            }
            counters.failedAtPost(o.op);
            slots.untake(o);   // the last taken first: the reverse of taking
            bc.member(i, e, 0);
        }
        if (posted > 0) {
            life.markError(e);
            qp.moveToError();
            // Members a provider did at once (QueuePair.DONE) have no entry to be flushed: the
            // marker behind them, flushed too, reports them, so the batch ends now.
            tailUnsignaled = true;
            postMarker();
        }
    }

    /**
     * Posts the request of {@code o}: signaled, unless it is ON_ERROR and not the one of its run
     * that is (see {@link #signalEvery}). On failure frees the slot and throws. Under postLock.
     */
    private void postOne(SendOperation o, int opcode, long localAddr, int length, int lkey, RemoteRegion remote,
                         long compareAdd, long swap, int imm) {
        boolean silent = o.kind == SendOperation.ON_ERROR && unsignaledRun + 1 < signalEvery;
        slots.push(o);
        int flags = silent ? 0 : QueuePair.SEND_SIGNALED;
        int rc = confined && (o.op == Operation.WRITE || o.op == Operation.READ)
                ? qp.postNow(o.slot, opcode, flags, localAddr, length, lkey, remote.address(), remote.rkey())
                : QueuePair.NOT_NOW;
        if (rc == QueuePair.NOT_NOW) {
            rc = qp.postSend(o.slot, opcode, flags, localAddr, length, lkey, remote == null ? 0 : remote.address(),
                    remote == null ? 0 : remote.rkey(), compareAdd, swap, imm);
        }
        if (rc == QueuePair.DONE && silent) {
            // Carried out during the call (shm's direct path), and nothing will report it: it
            // gives its slot and its region back now, and needs no reclaiming signal or marker.
            slots.popTail();
            RegionResources local = o.local;
            counters.completedAtPost(o.op, o.length);
            slots.untake(o);
            if (local != null) {
                local.releaseFromOperation();
            }
            return;
        }
        if (rc != 0) {
            slots.popTail();
            String op = o.op.label;
            slots.untake(o);
            throw new RdmaException(op + ": ibv_post_send failed with errno " + rc
                    + " (the QP is " + QueuePair.stateName(qp.queryState()) + ")");
        }
        if (silent) {
            unsignaledRun++;
            tailUnsignaled = true;
        } else {
            signaled();
        }
    }

    /** A signaled request was posted: it reports every request before it. Under postLock. */
    private void signaled() {
        unsignaledRun = 0;
        tailUnsignaled = false;
    }

    /**
     * After the QP was put in error (a teardown, or a batch cut short): when the last request posted was unsignaled,
     * posts a signaled zero-length write behind it. The device flushes it (the QP is in error),
     * and as the send queue completes in order, its completion tells that every request before it
     * is done: those that succeeded silently are otherwise never reported, and their slots would
     * hold the teardown until its deadline. It needs no slot: the marker has a record, and the
     * queue pair an entry, of its own.
     */
    void postMarker() {
        synchronized (postLock) {
            SendOperation m = slots.marker();
            if (!tailUnsignaled || m.kind != SendOperation.FREE) {
                return;
            }
            m.op = Operation.WRITE;
            m.kind = SendOperation.MARKER;
            slots.push(m);
            int rc = qp.postSend(m.slot, QueuePair.WR_RDMA_WRITE, QueuePair.SEND_SIGNALED, 0, 0, 0, 0, 0, 0, 0, 0);
            if (rc != 0) {
                slots.popTail();
                m.clear();   // the teardown ends at its deadline instead
                return;
            }
            signaled();
        }
    }

    private long scratch(SendOperation o) {
        return scratchBase + 8L * o.slot;
    }

    /** Waits until {@code n} slots are free, up to the timeout; under postLock, never on the IO thread. */
    private void awaitRoom(int n, String op) {
        long deadline = 0;
        while (true) {
            if (life.state() != ConnectionState.ESTABLISHED) {
                throw life.notUsable(op);
            }
            if (slots.free() >= n) {
                return;
            }
            if (io.inThisThread()) {
                throw new RdmaTimeoutException(op + ": the send queue is full (" + slots.depth()
                        + " operations outstanding) and this is the IO thread, which must not wait for it");
            }
            long now = life.nanoTime();
            if (deadline == 0) {
                deadline = now + config.timeout().toNanos();
            } else if (now >= deadline) {
                throw new RdmaTimeoutException(op + ": the send queue stayed full ("
                        + slots.depth() + " operations outstanding) for " + config.timeout());
            }
            slots.waiting(1);
            try {
                waitForRoom();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaException(op + ": interrupted while waiting for room in the send queue");
            } finally {
                slots.waiting(-1);
            }
        }
    }

    private void waitForRoom() throws InterruptedException {
        if (io.drivenByCaller()) {
            // Progress is the caller's to drive: poll, keeping postLock (a callback of this pass
            // that posts here re-enters it), and look again at once. Only while another thread is
            // in a pass, give the lock up for a while: that pass frees the slots, and its
            // callbacks may post here.
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            if (io.poll() == 0 && io.polledElsewhere()) {
                postLock.wait(1);
            } else {
                Thread.onSpinWait();
            }
        } else {
            // 1 ms at most: the completing thread reads the waiting count without a fence after
            // freeing a slot, so a notify may be missed; the next look is then soon.
            postLock.wait(1);
        }
    }

    /** Nothing outstanding in the send queue; under postLock. */
    boolean drained() {
        return slots.allFree();
    }

    /** Frees the scratch words; once the QP is gone and nothing is in flight. */
    void close() {
        if (scratchMr != null) {
            scratchMr.close();
        }
        if (memory != null) {
            memory.close();
            memory = null;
        }
    }
}
