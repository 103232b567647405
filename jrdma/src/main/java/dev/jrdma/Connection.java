package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.exceptions.WorkCompletionException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * A reliable connection to one peer: two-sided messages, one-sided reads, writes and atomics,
 * each as a {@link CompletableFuture}, with a {@link CompletionHandler} (no allocation per
 * operation), or blocking ({@code *Sync}).
 *
 * <p><b>Threads.</b> Operations may be started from any thread; posting is serialised per
 * connection. Completions, {@link #onReceive} callbacks and future completions run on the
 * connection's IO thread: do not block in them (hand long work to an executor). While the
 * send queue is full, starting an operation waits for room, up to the configured timeout.
 *
 * <p><b>Errors.</b> As RC requires, an operation that fails remotely (wrong rkey, bounds, access)
 * puts the connection in {@link ConnectionState#ERROR}: that operation fails with the cause,
 * every other outstanding one with {@link ConnectionClosedException}, and so does every later one.
 * Wrong input found before posting (sizes, closed regions, access the remote descriptor does not
 * grant) fails that operation only, and the connection stays usable.
 */
public final class Connection implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private static final long RECV_FLAG = 1L << 62;
    private static final byte VOID_FUTURE = 1, LONG_FUTURE = 2, VOID_HANDLER = 3, LONG_HANDLER = 4;

    private final Rdma rdma;
    final IoThread io;
    private final ConnectionConfig config;
    private final InetSocketAddress remoteAddress;
    final RdmaServer server;
    final CompletableFuture<Connection> connected = new CompletableFuture<>();
    private final CompletableFuture<Void> released = new CompletableFuture<>();

    CmEndpoint endpoint;
    private QueuePair qp;
    CompletionQueue cq;
    private Handshake peer = Handshake.UNKNOWN;
    /** For an accepted connection: the handshake of the request, applied once established. */
    Handshake pendingPeer = Handshake.UNKNOWN;
    private volatile ConnectionState state = ConnectionState.CONNECTING;
    private volatile RdmaException failure;

    // Receive buffers and the 8-byte landing slots of atomics, one registration each.
    private Arena memory;
    private MemoryRegistration receiveMr;
    private MemoryRegistration scratchMr;
    private int receiveSize;
    private int postedReceives;

    // Outstanding send-queue operations, by slot (the wr_id). Guarded by postLock.
    private final Object postLock = new Object();
    private final int[] freeSlots;
    private int freeTop;
    private final byte[] kind;
    private final byte[] opcodeOf;
    private final Object[] futures;
    private final Object[] attachments;
    private int waitingForSlot;

    // Received messages nobody took yet, and receive() calls waiting for one. Guarded by themselves.
    private final ArrayDeque<Message> undelivered = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Message>> waiting = new ArrayDeque<>();
    private volatile BiConsumer<Connection, Message> onReceive;
    private volatile Consumer<Connection> onDisconnect;
    private boolean tearingDown;
    private long teardownDeadline;

    private final CompletionSink sink = this::onCompletion;
    final IoThread.Source source = new IoThread.Source() {
        @Override
        public int poll() {
            int n = cq.poll(sink, 32);
            if (tearingDown && n == 0 && (drained() || System.nanoTime() > teardownDeadline)) {
                release();
            }
            return n;
        }

        @Override
        public void arm() {
            cq.arm();
        }
    };

    Connection(Rdma rdma, IoThread io, ConnectionConfig config, InetSocketAddress remoteAddress, RdmaServer server) {
        this.rdma = rdma;
        this.io = io;
        this.config = config;
        this.remoteAddress = remoteAddress;
        this.server = server;
        int depth = config.sendQueueDepth();
        freeSlots = new int[depth];
        for (int i = 0; i < depth; i++) {
            freeSlots[i] = depth - 1 - i;
        }
        freeTop = depth;
        kind = new byte[depth];
        opcodeOf = new byte[depth];
        futures = new Object[depth];
        attachments = new Object[depth];
    }

    // ---------------------------------------------------------------- set-up (IO / CM thread)

    /** Makes the CQ and the registered buffers; before the QP exists. */
    void prepare(dev.jrdma.spi.Device device, dev.jrdma.spi.CompletionChannel channel) {
        cq = device.createCompletionQueue(config.sendQueueDepth() + config.receiveQueueDepth(), channel);
        memory = Arena.ofShared();
        receiveSize = config.receiveBufferSize();
        MemorySegment receives = memory.allocate((long) receiveSize * config.receiveQueueDepth(), 64);
        receiveMr = device.register(receives, AccessFlags.LOCAL_WRITE);
        MemorySegment scratch = memory.allocate(8L * config.sendQueueDepth(), 8);
        scratchMr = device.register(scratch, AccessFlags.LOCAL_WRITE);
    }

    QueuePairSpec spec(dev.jrdma.spi.DeviceCapabilities caps) {
        int rd = config.rdAtomicFor(caps);
        return new QueuePairSpec(config.sendQueueDepth(), config.receiveQueueDepth(), 1, 1, config.maxInlineData(),
                rd, rd, config.retryCount(), config.rnrRetry());
    }

    /** The QP exists (INIT): post every receive, before the peer can send. */
    void onQueuePair(QueuePair qp) {
        this.qp = qp;
        synchronized (postLock) {
            for (int i = 0; i < config.receiveQueueDepth(); i++) {
                postReceive(i);
            }
        }
    }

    void established(Handshake peer) {
        this.peer = peer;
        state = ConnectionState.ESTABLISHED;
        connected.complete(this);
    }

    /** Connecting failed: free what was made, fail the connect future. */
    void failConnect(RdmaException e) {
        if (state == ConnectionState.CONNECTING) {
            failure = e;
            state = ConnectionState.CLOSED;
            connected.completeExceptionally(e);
            release();
        }
    }

    // ---------------------------------------------------------------- information

    public ConnectionState state() {
        return state;
    }

    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    public ConnectionConfig config() {
        return config;
    }

    /** The application bytes the peer sent with its request or accept (empty when none). */
    public byte[] peerPrivateData() {
        return peer.data().clone();
    }

    /** The largest message the peer receives, when it told us (a jrdma peer does); -1 when unknown. */
    public int peerReceiveBufferSize() {
        return peer.receiveBufferSize();
    }

    /** The QP: number, state as the device reports it now, and what was negotiated. */
    public QueuePairInfo queuePair() {
        QueuePair q = qp;
        if (q == null) {
            throw new ConnectionClosedException("connection to " + remoteAddress + " has no queue pair (" + state + ")");
        }
        QueuePairSpec g = q.granted();
        int deviceState = state == ConnectionState.CLOSED ? QueuePair.STATE_ERR : q.queryState();
        return new QueuePairInfo(q.qpNum(), QueuePair.stateName(deviceState), g.sendDepth(), g.recvDepth(),
                g.maxInlineData(), g.initiatorDepth(), g.responderResources(), g.retryCount(), g.rnrRetry());
    }

    /** The first failure, once the connection is in ERROR or CLOSED; null before. */
    public RdmaException failure() {
        return failure;
    }

    /** Called (on the IO thread) when the connection goes down for any reason after being established. */
    public Connection onDisconnect(Consumer<Connection> callback) {
        onDisconnect = callback;
        return this;
    }

    // ---------------------------------------------------------------- two-sided

    /** Sends {@code buf} as one message; the peer receives it in a posted receive. */
    public CompletableFuture<Void> send(LocalRegion buf) {
        return voidOp(QueuePair.WR_SEND, buf, null, 0);
    }

    /** Sends {@code buf} with a 32-bit immediate value the receiver sees in {@link Message#imm()}. */
    public CompletableFuture<Void> sendWithImm(int imm, LocalRegion buf) {
        return voidOp(QueuePair.WR_SEND_WITH_IMM, buf, null, imm);
    }

    /**
     * Sets a callback for every received message (SEND, or WRITE_WITH_IMM notice), on the IO
     * thread; the message is closed when it returns. Messages that arrived before are handed to it
     * first. With a callback set, {@link #receive()} is not for use.
     */
    public Connection onReceive(BiConsumer<Connection, Message> callback) {
        onReceive = callback;
        io.execute(this::drainUndeliveredToCallback);
        return this;
    }

    /** The next received message; close it to give its buffer back. */
    public CompletableFuture<Message> receive() {
        CompletableFuture<Message> f = new CompletableFuture<>();
        Message m;
        synchronized (waiting) {
            m = undelivered.poll();
            if (m == null) {
                RdmaException why = failure;
                if (why != null) {
                    f.completeExceptionally(closedBecause(why));
                    return f;
                }
                waiting.add(f);
                return f;
            }
        }
        f.complete(m);
        return f;
    }

    // ---------------------------------------------------------------- one-sided

    /** Writes all of {@code buf} to the start of {@code remote}. */
    public CompletableFuture<Void> write(LocalRegion buf, RemoteRegion remote) {
        return voidOp(QueuePair.WR_RDMA_WRITE, buf, remote, 0);
    }

    /** Allocation-free form of {@link #write(LocalRegion, RemoteRegion)}: {@code handler} gets null on success. */
    public <A> void write(LocalRegion buf, RemoteRegion remote, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_RDMA_WRITE, buf, remote, 0, 0, 0, attachment, handler, VOID_HANDLER);
    }

    /** {@link #write} and then wait for it, in the caller. */
    public void writeSync(LocalRegion buf, RemoteRegion remote) {
        await(write(buf, remote));
    }

    /** Writes {@code buf} to {@code remote}; the peer gets a message with {@code imm} and the byte count. */
    public CompletableFuture<Void> writeWithImm(LocalRegion buf, RemoteRegion remote, int imm) {
        return voidOp(QueuePair.WR_RDMA_WRITE_WITH_IMM, buf, remote, imm);
    }

    /** Reads {@code buf.length()} bytes from the start of {@code remote} into {@code buf}. */
    public CompletableFuture<Void> read(RemoteRegion remote, LocalRegion buf) {
        return voidOp(QueuePair.WR_RDMA_READ, buf, remote, 0);
    }

    public <A> void read(RemoteRegion remote, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_RDMA_READ, buf, remote, 0, 0, 0, attachment, handler, VOID_HANDLER);
    }

    public void readSync(RemoteRegion remote, LocalRegion buf) {
        await(read(remote, buf));
    }

    /** 8-byte compare-and-swap at the start of {@code remote}; completes with the prior value. */
    public CompletableFuture<Long> compareAndSwap(RemoteRegion remote, long expected, long desired) {
        return longOp(QueuePair.WR_ATOMIC_CMP_AND_SWP, remote, expected, desired);
    }

    /** 8-byte fetch-and-add at the start of {@code remote}; completes with the prior value. */
    public CompletableFuture<Long> fetchAndAdd(RemoteRegion remote, long delta) {
        return longOp(QueuePair.WR_ATOMIC_FETCH_AND_ADD, remote, delta, 0);
    }

    public <A> void fetchAndAdd(RemoteRegion remote, long delta, A attachment, CompletionHandler<Long, ? super A> handler) {
        handlerOp(QueuePair.WR_ATOMIC_FETCH_AND_ADD, null, remote, 0, delta, 0, attachment, handler, LONG_HANDLER);
    }

    public long compareAndSwapSync(RemoteRegion remote, long expected, long desired) {
        return await(compareAndSwap(remote, expected, desired));
    }

    public long fetchAndAddSync(RemoteRegion remote, long delta) {
        return await(fetchAndAdd(remote, delta));
    }

    // ---------------------------------------------------------------- posting

    private CompletableFuture<Void> voidOp(int opcode, LocalRegion buf, RemoteRegion remote, int imm) {
        return futureOp(opcode, buf, remote, imm, 0, 0, VOID_FUTURE);
    }

    private CompletableFuture<Long> longOp(int opcode, RemoteRegion remote, long compareAdd, long swap) {
        return futureOp(opcode, null, remote, 0, compareAdd, swap, LONG_FUTURE);
    }

    private <T> CompletableFuture<T> futureOp(int opcode, LocalRegion buf, RemoteRegion remote, int imm, long compareAdd,
                                              long swap, byte k) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            post(opcode, buf, remote, imm, compareAdd, swap, k, f, null);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    private <A> void handlerOp(int opcode, LocalRegion buf, RemoteRegion remote, int imm, long compareAdd, long swap,
                               A attachment, CompletionHandler<?, ? super A> handler, byte k) {
        try {
            post(opcode, buf, remote, imm, compareAdd, swap, k, handler, attachment);
        } catch (RuntimeException e) {
            @SuppressWarnings("unchecked")
            CompletionHandler<Object, Object> h = (CompletionHandler<Object, Object>) handler;
            h.failed(e, attachment);
        }
    }

    private static String opName(int opcode) {
        return switch (opcode) {
            case QueuePair.WR_SEND -> "send";
            case QueuePair.WR_SEND_WITH_IMM -> "sendWithImm";
            case QueuePair.WR_RDMA_WRITE -> "write";
            case QueuePair.WR_RDMA_WRITE_WITH_IMM -> "writeWithImm";
            case QueuePair.WR_RDMA_READ -> "read";
            case QueuePair.WR_ATOMIC_CMP_AND_SWP -> "compareAndSwap";
            case QueuePair.WR_ATOMIC_FETCH_AND_ADD -> "fetchAndAdd";
            default -> "opcode " + opcode;
        };
    }

    /** Checks what can be checked here, so that bad input fails this operation only. */
    private void validate(int opcode, LocalRegion buf, RemoteRegion remote) {
        String op = opName(opcode);
        boolean atomic = opcode == QueuePair.WR_ATOMIC_CMP_AND_SWP || opcode == QueuePair.WR_ATOMIC_FETCH_AND_ADD;
        if (buf != null) {
            if (buf.isClosed()) {
                throw new IllegalArgumentException(op + ": the local region is closed");
            }
            if (buf.length() > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(op + ": " + buf.length() + " bytes is more than one operation carries (2^31-1)");
            }
            if (opcode == QueuePair.WR_RDMA_READ && !buf.allows(AccessFlags.LOCAL_WRITE)) {
                throw new IllegalArgumentException(op + ": the local region needs LOCAL_WRITE to receive read data");
            }
        }
        if ((opcode == QueuePair.WR_SEND || opcode == QueuePair.WR_SEND_WITH_IMM) && peer.known()
                && buf.length() > peer.receiveBufferSize()) {
            throw new IllegalArgumentException(op + " of " + buf.length() + " bytes exceeds the peer's receive buffer of "
                    + peer.receiveBufferSize() + " bytes (its ConnectionConfig.receiveBufferSize)");
        }
        if (remote != null) {
            long need = atomic ? 8 : buf.length();
            if (need > remote.length()) {
                throw new IllegalArgumentException(op + " of " + need + " bytes exceeds the remote region's "
                        + remote.length() + " bytes (" + remote + ")");
            }
            Access access = opcode == QueuePair.WR_RDMA_READ ? Access.REMOTE_READ
                    : atomic ? Access.REMOTE_ATOMIC : Access.REMOTE_WRITE;
            if (!remote.allows(access)) {
                throw new RemoteAccessException(op + " to " + remote, "not attempted: the region's descriptor does not grant " + access);
            }
            if (atomic && (remote.address() & 7) != 0) {
                throw new IllegalArgumentException(op + ": the remote address 0x" + Long.toHexString(remote.address())
                        + " is not 8-byte aligned, as atomics require");
            }
        }
    }

    private void post(int opcode, LocalRegion buf, RemoteRegion remote, int imm, long compareAdd, long swap, byte k,
                      Object completion, Object attachment) {
        validate(opcode, buf, remote);
        boolean atomic = k == LONG_FUTURE || k == LONG_HANDLER;
        synchronized (postLock) {
            long deadline = 0;
            while (true) {
                if (state != ConnectionState.ESTABLISHED) {
                    throw notUsable(opName(opcode));
                }
                if (freeTop > 0) {
                    break;
                }
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + config.timeout().toNanos();
                } else if (now >= deadline) {
                    throw new RdmaTimeoutException(opName(opcode) + ": the send queue stayed full ("
                            + config.sendQueueDepth() + " operations outstanding) for " + config.timeout());
                }
                waitingForSlot++;
                try {
                    postLock.wait(Math.max(1, (deadline - now) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new RdmaException(opName(opcode) + ": interrupted while waiting for room in the send queue");
                } finally {
                    waitingForSlot--;
                }
            }
            int slot = freeSlots[--freeTop];
            kind[slot] = k;
            opcodeOf[slot] = (byte) opcode;
            futures[slot] = completion;
            attachments[slot] = attachment;
            long localAddr;
            int length;
            int lkey;
            if (atomic) {
                localAddr = scratchMr.memory().address() + 8L * slot;
                length = 8;
                lkey = scratchMr.lkey();
            } else {
                localAddr = buf.address();
                length = (int) buf.length();
                lkey = buf.lkey();
            }
            int rc = qp.postSend(slot, opcode, QueuePair.SEND_SIGNALED, localAddr, length, lkey,
                    remote == null ? 0 : remote.address(), remote == null ? 0 : remote.rkey(), compareAdd, swap, imm);
            if (rc != 0) {
                freeSlot(slot);
                throw new RdmaException(opName(opcode) + ": ibv_post_send failed with errno " + rc
                        + " (the QP is " + QueuePair.stateName(qp.queryState()) + ")");
            }
        }
    }

    private void freeSlot(int slot) {
        futures[slot] = null;
        attachments[slot] = null;
        kind[slot] = 0;
        freeSlots[freeTop++] = slot;
        if (waitingForSlot > 0) {
            postLock.notifyAll();
        }
    }

    /** Nothing outstanding any more: every send-queue operation and every receive completed. */
    private boolean drained() {
        synchronized (postLock) {
            return freeTop == freeSlots.length && postedReceives == 0;
        }
    }

    private RdmaException notUsable(String op) {
        RdmaException why = failure;
        return new ConnectionClosedException(op + ": the connection to " + remoteAddress + " is " + state
                + (why == null ? "" : " (" + why.getMessage() + ")"), why);
    }

    private static ConnectionClosedException closedBecause(RdmaException why) {
        return why instanceof ConnectionClosedException c ? c : new ConnectionClosedException(why.getMessage(), why);
    }

    // ---------------------------------------------------------------- completions (IO thread)

    private void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
        if ((wrId & RECV_FLAG) != 0) {
            onReceiveCompletion((int) (wrId & 0xffff_ffffL), status, opcode, byteLen, imm, withImm);
            return;
        }
        int slot = (int) wrId;
        byte k;
        int op;
        Object completion;
        Object attachment;
        long value = 0;
        synchronized (postLock) {
            k = kind[slot];
            op = opcodeOf[slot];
            completion = futures[slot];
            attachment = attachments[slot];
            if (k == LONG_FUTURE || k == LONG_HANDLER) {
                value = scratchMr.memory().get(ValueLayout.JAVA_LONG, 8L * slot);
            }
            freeSlot(slot);
        }
        if (status == WorkCompletion.SUCCESS) {
            succeed(k, completion, attachment, value);
            return;
        }
        RdmaException e;
        if (status == WorkCompletion.WR_FLUSH_ERR && failure != null) {
            e = closedBecause(failure);
        } else {
            String name = WorkCompletion.statusName(status);
            String what = opName(op) + " on the connection to " + remoteAddress;
            e = status == WorkCompletion.REM_ACCESS_ERR ? new RemoteAccessException(what, name)
                    : new WorkCompletionException(what, name);
            markError(e);
        }
        fail(k, completion, attachment, e);
    }

    @SuppressWarnings("unchecked")
    private static void succeed(byte k, Object completion, Object attachment, long value) {
        switch (k) {
            case VOID_FUTURE -> ((CompletableFuture<Void>) completion).complete(null);
            case LONG_FUTURE -> ((CompletableFuture<Long>) completion).complete(value);
            case VOID_HANDLER -> ((CompletionHandler<Void, Object>) completion).completed(null, attachment);
            case LONG_HANDLER -> ((CompletionHandler<Long, Object>) completion).completed(value, attachment);
            default -> throw new IllegalStateException("completion for a free slot");
        }
    }

    @SuppressWarnings("unchecked")
    private static void fail(byte k, Object completion, Object attachment, Throwable e) {
        switch (k) {
            case VOID_FUTURE, LONG_FUTURE -> ((CompletableFuture<?>) completion).completeExceptionally(e);
            case VOID_HANDLER, LONG_HANDLER -> ((CompletionHandler<?, Object>) completion).failed(e, attachment);
            default -> throw new IllegalStateException("completion for a free slot");
        }
    }

    private void onReceiveCompletion(int buffer, int status, int opcode, int byteLen, int imm, boolean withImm) {
        synchronized (postLock) {
            postedReceives--;
        }
        if (status != WorkCompletion.SUCCESS) {
            if (status != WorkCompletion.WR_FLUSH_ERR || failure == null) {
                markError(new WorkCompletionException("receive on the connection to " + remoteAddress,
                        WorkCompletion.statusName(status)));
            }
            return;
        }
        boolean write = opcode == WorkCompletion.OP_RECV_RDMA_WITH_IMM;
        MemorySegment data = receiveMr.memory().asSlice((long) buffer * receiveSize, write ? 0 : byteLen);
        deliver(new Message(this, buffer, data, byteLen, withImm, imm, write));
    }

    private void deliver(Message m) {
        BiConsumer<Connection, Message> cb = onReceive;
        if (cb != null) {
            try (m) {
                cb.accept(this, m);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "onReceive callback of the connection to " + remoteAddress + " threw", e);
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

    private void drainUndeliveredToCallback() {
        while (true) {
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

    /** A message's buffer is free again: post it, unless the connection is going down. */
    void repost(int buffer) {
        synchronized (postLock) {
            if (state == ConnectionState.ESTABLISHED) {
                postReceive(buffer);
            }
        }
    }

    private void postReceive(int buffer) {
        int rc = qp.postRecv(RECV_FLAG | buffer, receiveMr.memory().address() + (long) buffer * receiveSize, receiveSize,
                receiveMr.lkey());
        if (rc != 0) {
            throw new RdmaException("ibv_post_recv failed with errno " + rc + " on the connection to " + remoteAddress);
        }
        postedReceives++;
    }

    /** The first failure moves the connection to ERROR; the QP is in error already (the device did it). */
    private void markError(RdmaException e) {
        if (failure == null) {
            failure = e;
            if (state == ConnectionState.ESTABLISHED) {
                state = ConnectionState.ERROR;
            }
            LOG.log(System.Logger.Level.DEBUG, "connection to {0} in error: {1}", remoteAddress, e.getMessage());
            failReceivers(e);
        }
    }

    private void failReceivers(RdmaException e) {
        java.util.List<CompletableFuture<Message>> list;
        synchronized (waiting) {
            list = new java.util.ArrayList<>(waiting);
            waiting.clear();
        }
        for (CompletableFuture<Message> f : list) {
            f.completeExceptionally(closedBecause(e));
        }
    }

    // ---------------------------------------------------------------- going down

    /** The peer disconnected (or the device went away): flush, fail, free. On the IO thread. */
    void peerDisconnected() {
        startTeardown(new ConnectionClosedException("the peer at " + remoteAddress + " disconnected"));
    }

    private void startTeardown(ConnectionClosedException why) {
        if (tearingDown || released.isDone()) {
            return;
        }
        tearingDown = true;
        if (failure == null) {
            failure = why;
        }
        failReceivers(why);
        state = ConnectionState.CLOSED;
        if (endpoint != null) {
            endpoint.disconnect();
        }
        if (qp != null) {
            try {
                qp.moveToError();   // everything outstanding completes, flushed
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.DEBUG, "moving the QP to error: {0}", e.getMessage());
            }
        }
        teardownDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        if (cq == null) {
            release();
        }
    }

    /** Frees everything; fails what is still outstanding (it should be nothing after the flush). */
    private void release() {
        if (released.isDone()) {
            return;
        }
        state = ConnectionState.CLOSED;
        io.remove(source);
        RdmaException why = failure != null ? failure : new ConnectionClosedException("connection closed");
        synchronized (postLock) {
            for (int slot = 0; slot < kind.length; slot++) {
                if (kind[slot] != 0) {
                    byte k = kind[slot];
                    Object c = futures[slot];
                    Object a = attachments[slot];
                    freeSlot(slot);
                    fail(k, c, a, closedBecause(why));
                }
            }
        }
        if (endpoint != null) {
            endpoint.close();
        }
        rdma.drainCompletionEvents(io);
        if (cq != null) {
            cq.close();
        }
        if (receiveMr != null) {
            receiveMr.close();
        }
        if (scratchMr != null) {
            scratchMr.close();
        }
        if (memory != null) {
            memory.close();
        }
        rdma.forget(this);
        if (server != null) {
            server.forget(this);
        }
        released.complete(null);
        Consumer<Connection> cb = onDisconnect;
        if (cb != null && connected.isDone() && !connected.isCompletedExceptionally()) {
            try {
                cb.accept(this);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "onDisconnect callback threw", e);
            }
        }
    }

    /**
     * Disconnects: every outstanding operation and receive completes (with
     * {@link ConnectionClosedException}), the peer sees the disconnect, and everything is freed.
     * Idempotent; waits up to the configured timeout unless called on the IO thread.
     */
    @Override
    public void close() {
        if (released.isDone()) {
            return;
        }
        io.execute(() -> {
            if (state == ConnectionState.CONNECTING) {
                failConnect(new ConnectionClosedException("connection to " + remoteAddress + " closed while connecting"));
            } else {
                startTeardown(new ConnectionClosedException("the connection to " + remoteAddress + " was closed by this side"));
            }
        });
        if (!io.inThisThread()) {
            try {
                released.get(config.timeout().toMillis() + 5_000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                throw new RdmaTimeoutException("closing the connection to " + remoteAddress + " did not finish");
            }
        }
    }

    CompletableFuture<Void> released() {
        return released;
    }

    static <T> T await(CompletableFuture<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while waiting");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    @Override
    public String toString() {
        return "Connection[" + remoteAddress + ", " + state + "]";
    }
}
