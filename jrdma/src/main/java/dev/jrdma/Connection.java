package dev.jrdma;

import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.DeviceCapabilities;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.exceptions.WorkCompletionException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.ArrayDeque;
import java.util.Objects;
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
    /** What completes an operation: the kind of its completion object. */
    private static final byte VOID_FUTURE = 1, LONG_FUTURE = 2, VOID_HANDLER = 3, LONG_HANDLER = 4, BATCH_MEMBER = 5;
    /** Emulated atomics: a compare-and-swap loop on one slot (see MaskedAtomics). */
    static final byte EMU_NONE = 0, EMU_MASKED_CAS = 1, EMU_MASKED_FAA = 2, EMU_ATOMIC_WRITE = 3;

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
    private Arena memory;   // guarded by this once released
    /** Messages delivered and not yet closed: their buffers must outlive a release. */
    private final java.util.concurrent.atomic.AtomicInteger lentMessages = new java.util.concurrent.atomic.AtomicInteger();
    private volatile boolean memoryFreeWanted;
    /** The device flushes ({@code WR_FLUSH}); else a flush is a 1-byte read after the writes. */
    private boolean nativeFlush;
    private MemoryRegistration receiveMr;
    private MemoryRegistration scratchMr;
    private int receiveSize;
    private int postedReceives;

    // Outstanding send-queue operations, by slot (the wr_id). Posting is serialised by postLock;
    // completing takes no lock. A slot is in one of two single-producer single-consumer rings:
    //   free: the completing thread returns slots at freeTail, posters take them at freeHead;
    //   posted: posters add at postTail in posting order (the send queue completes in this
    //           order), the completing thread takes them from postHead.
    // Each ring's tail is published with a release store after its entry and the slot's fields
    // are written, and read (volatile) before they are, so the slot's fields pass from poster to
    // completer and back without a lock. The completing thread is the IO thread (inline: the
    // thread in IoThread.poll, one at a time). A completion used to take postLock twice, which
    // was most of its cost. The slot arrays below belong to whoever holds the slot.
    private final Object postLock = new Object();
    private final int[] freeRing;
    private final int freeMask;
    private long freeHead;               // posters, under postLock
    private volatile long freeTail;      // the completing thread (release stores)
    private final int[] postRing;
    private final int postMask;
    private volatile long postTail;      // posters under postLock, and an emulated atomic's next step (release stores)
    private long postHead;               // the completing thread
    private final int depth;
    private final byte[] kind;
    private final byte[] opcodeOf;
    private final Object[] futures;
    private final Object[] attachments;
    /** Posters waiting for a free slot (under postLock); the completing thread notifies them. */
    private volatile int waitingForSlot;
    // Per slot: a batch member's index (argA), or an emulated atomic's arguments and state.
    private final byte[] emu;
    private final long[] argA, argB, argC, argD, expected, emuDeadline;
    private final RemoteRegion[] emuRemote;
    private static final VarHandle FREE_TAIL, POST_TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            FREE_TAIL = l.findVarHandle(Connection.class, "freeTail", long.class);
            POST_TAIL = l.findVarHandle(Connection.class, "postTail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // Received messages nobody took yet, and receive() calls waiting for one. Guarded by themselves.
    private final ArrayDeque<Message> undelivered = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Message>> waiting = new ArrayDeque<>();
    private volatile BiConsumer<Connection, Message> onReceive;
    private volatile Consumer<Connection> onDisconnect;
    private boolean tearingDown;
    /** Completions handed to this connection so far (the polling thread's). */
    private long completions;
    /** The IO thread is inside this connection's poll (on that thread only). */
    private boolean polling;
    private long teardownDeadline;

    private final CompletionSink sink = this::onCompletion;
    final IoThread.Source source = new IoThread.Source() {
        @Override
        public int poll() {
            polling = true;
            int n;
            long before = completions;
            try {
                n = cq.poll(sink, 32);
            } finally {
                polling = false;
            }
            // n counts the peer's frames served too (a peer that keeps sending during our
            // teardown must not hold it back): the release waits for a pass without completions.
            if (tearingDown && ((completions == before && drained()) || System.nanoTime() > teardownDeadline)) {
                release();
            }
            return n;
        }

        @Override
        public void arm() {
            cq.arm();
        }

        @Override
        public void failed(Throwable t) {
            polling = false;
            if (!tearingDown) {
                deviceFailed("internal error on the IO thread: " + t);
                startTeardown(new ConnectionClosedException("the connection to " + remoteAddress
                        + " failed on its IO thread: " + t, t));
            }
        }
    };

    Connection(Rdma rdma, IoThread io, ConnectionConfig config, InetSocketAddress remoteAddress, RdmaServer server) {
        this.rdma = rdma;
        this.io = io;
        this.config = config;
        this.remoteAddress = remoteAddress;
        this.server = server;
        int depth = config.sendQueueDepth();
        this.depth = depth;
        // Capacity above depth: a poster that takes back its last take (untakeSlot) finds its
        // entry still there, as the completing thread can never have wrapped onto it.
        int capacity = Integer.highestOneBit(depth) << 1;
        freeRing = new int[capacity];
        freeMask = capacity - 1;
        for (int i = 0; i < depth; i++) {
            freeRing[i] = i;
        }
        freeTail = depth;
        postRing = new int[capacity];
        postMask = capacity - 1;
        kind = new byte[depth];
        opcodeOf = new byte[depth];
        futures = new Object[depth];
        attachments = new Object[depth];
        emu = new byte[depth];
        argA = new long[depth];
        argB = new long[depth];
        argC = new long[depth];
        argD = new long[depth];
        expected = new long[depth];
        emuDeadline = new long[depth];
        emuRemote = new RemoteRegion[depth];
    }

    // ---------------------------------------------------------------- set-up (IO / CM thread)

    /** Makes the CQ and the registered buffers; before the QP exists. */
    void prepare(Device device, CompletionChannel channel) {
        nativeFlush = device.flushes();
        cq = device.createCompletionQueue(config.sendQueueDepth() + config.receiveQueueDepth(), channel);
        memory = Arena.ofShared();
        receiveSize = config.receiveBufferSize();
        MemorySegment receives = memory.allocate((long) receiveSize * config.receiveQueueDepth(), 64);
        receiveMr = device.register(receives, AccessFlags.LOCAL_WRITE);
        MemorySegment scratch = memory.allocate(8L * config.sendQueueDepth(), 8);
        scratchMr = device.register(scratch, AccessFlags.LOCAL_WRITE);
    }

    QueuePairSpec spec(DeviceCapabilities caps) {
        int rd = config.rdAtomicFor(caps);
        return new QueuePairSpec(config.sendQueueDepth(), config.receiveQueueDepth(), 1, 1, config.maxInlineData(),
                rd, rd, config.retryCount(), config.rnrRetry(), config.ackTimeout(), config.minRnrTimer());
    }

    /** What the connection manager creates this connection's queue pair for: us, and the lock our posts are under. */
    final QueuePairOwner owner = new QueuePairOwner() {
        @Override
        public void onQueuePair(QueuePair qp) {
            Connection.this.onQueuePair(qp);
        }

        @Override
        public Object postMonitor() {
            return postLock;
        }
    };

    /** The QP exists (INIT): post every receive, before the peer can send. */
    void onQueuePair(QueuePair qp) {
        this.qp = qp;
        rdma.queuePairCreated(qp.qpNum(), this);
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

    private String deviceName() {
        return rdma.deviceName();
    }

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

    /**
     * How many receives the peer keeps posted, when it told us (a jrdma peer does); -1 when
     * unknown. More sends than this in flight at once can meet a receiver-not-ready wait.
     */
    public int peerReceiveQueueDepth() {
        return peer.receiveDepth();
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
                g.maxInlineData(), g.initiatorDepth(), g.responderResources(), g.retryCount(), g.rnrRetry(),
                state == ConnectionState.CLOSED ? -1 : q.queryAckTimeout(),
                state == ConnectionState.CLOSED ? -1 : q.queryMinRnrTimer());
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
        return futureOp(QueuePair.WR_SEND, buf, null, 0, 0, 0, VOID_FUTURE);
    }

    /** Allocation-free form of {@link #send(LocalRegion)}: {@code handler} gets null on success. */
    public <A> void send(LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_SEND, buf, null, 0, 0, 0, attachment, handler, VOID_HANDLER);
    }

    /** {@link #send(LocalRegion)}, waiting in the caller. */
    public void sendSync(LocalRegion buf) {
        syncVoid(QueuePair.WR_SEND, buf, null, 0, 0, 0);
    }

    /** Sends {@code buf} with a 32-bit immediate value the receiver sees in {@link Message#imm()}. */
    public CompletableFuture<Void> sendWithImm(int imm, LocalRegion buf) {
        return futureOp(QueuePair.WR_SEND_WITH_IMM, buf, null, imm, 0, 0, VOID_FUTURE);
    }

    public <A> void sendWithImm(int imm, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_SEND_WITH_IMM, buf, null, imm, 0, 0, attachment, handler, VOID_HANDLER);
    }

    public void sendWithImmSync(int imm, LocalRegion buf) {
        syncVoid(QueuePair.WR_SEND_WITH_IMM, buf, null, imm, 0, 0);
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

    // ---------------------------------------------------------------- regions

    /**
     * Hands {@code region} to the peer (async-rdma's {@code send_remote_mr}): its descriptor goes
     * as one message, which the peer takes with {@link #receiveRegion()}. To lend it for a while
     * only, send a {@link LocalRegion#lease lease}.
     */
    public CompletableFuture<Void> sendRegion(RemoteRegion region) {
        Objects.requireNonNull(region, "region");
        byte[] d = region.toDescriptor();
        LocalRegion msg = rdma.allocateUninitialized(d.length);
        MemorySegment.copy(d, 0, msg.segment(), ValueLayout.JAVA_BYTE, 0, d.length);
        CompletableFuture<Void> sent;
        try {
            sent = send(msg);
        } catch (RuntimeException e) {
            msg.close();
            throw e;
        }
        return sent.whenComplete((v, e) -> msg.close());
    }

    /** {@link #sendRegion(RemoteRegion)} of {@code region.toRemote()}: the peer gets its default rights. */
    public CompletableFuture<Void> sendRegion(LocalRegion region) {
        return sendRegion(region.toRemote());
    }

    /**
     * The next received message, read as a region descriptor the peer sent with
     * {@link #sendRegion}. A message that is not one (wrong size, magic, version or checksum)
     * fails the future with an {@code IllegalArgumentException} saying what is wrong; it is
     * consumed, and the connection stays up.
     */
    public CompletableFuture<RemoteRegion> receiveRegion() {
        return receive().thenApply(m -> {
            try (m) {
                if (m.byteCount() > RemoteRegion.LEASED_DESCRIPTOR_BYTES) {
                    throw new IllegalArgumentException("receiveRegion: a message of " + m.byteCount()
                            + " bytes is not a remote region descriptor (at most " + RemoteRegion.LEASED_DESCRIPTOR_BYTES + ")");
                }
                return RemoteRegion.fromDescriptor(m.data().asSlice(0, m.byteCount()).toArray(ValueLayout.JAVA_BYTE));
            }
        });
    }

    // ---------------------------------------------------------------- one-sided

    /** Writes all of {@code buf} to the start of {@code remote}. */
    public CompletableFuture<Void> write(LocalRegion buf, RemoteRegion remote) {
        return futureOp(QueuePair.WR_RDMA_WRITE, buf, remote, 0, 0, 0, VOID_FUTURE);
    }

    /** Allocation-free form of {@link #write(LocalRegion, RemoteRegion)}: {@code handler} gets null on success. */
    public <A> void write(LocalRegion buf, RemoteRegion remote, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_RDMA_WRITE, buf, remote, 0, 0, 0, attachment, handler, VOID_HANDLER);
    }

    /** {@link #write(LocalRegion, RemoteRegion)}, waiting in the caller. */
    public void writeSync(LocalRegion buf, RemoteRegion remote) {
        syncVoid(QueuePair.WR_RDMA_WRITE, buf, remote, 0, 0, 0);
    }

    /** Writes {@code buf} to {@code remote}; the peer gets a message with {@code imm} and the byte count. */
    public CompletableFuture<Void> writeWithImm(LocalRegion buf, RemoteRegion remote, int imm) {
        return futureOp(QueuePair.WR_RDMA_WRITE_WITH_IMM, buf, remote, imm, 0, 0, VOID_FUTURE);
    }

    public <A> void writeWithImm(LocalRegion buf, RemoteRegion remote, int imm, A attachment,
                                 CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_RDMA_WRITE_WITH_IMM, buf, remote, imm, 0, 0, attachment, handler, VOID_HANDLER);
    }

    public void writeWithImmSync(LocalRegion buf, RemoteRegion remote, int imm) {
        syncVoid(QueuePair.WR_RDMA_WRITE_WITH_IMM, buf, remote, imm, 0, 0);
    }

    /** Reads {@code buf.length()} bytes from the start of {@code remote} into {@code buf}. */
    public CompletableFuture<Void> read(RemoteRegion remote, LocalRegion buf) {
        return futureOp(QueuePair.WR_RDMA_READ, buf, remote, 0, 0, 0, VOID_FUTURE);
    }

    public <A> void read(RemoteRegion remote, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        handlerOp(QueuePair.WR_RDMA_READ, buf, remote, 0, 0, 0, attachment, handler, VOID_HANDLER);
    }

    public void readSync(RemoteRegion remote, LocalRegion buf) {
        syncVoid(QueuePair.WR_RDMA_READ, buf, remote, 0, 0, 0);
    }

    // ---------------------------------------------------------------- atomics

    /** 8-byte compare-and-swap at the start of {@code remote}; completes with the prior value. */
    public CompletableFuture<Long> compareAndSwap(RemoteRegion remote, long expected, long desired) {
        return futureOp(QueuePair.WR_ATOMIC_CMP_AND_SWP, null, remote, 0, expected, desired, LONG_FUTURE);
    }

    public <A> void compareAndSwap(RemoteRegion remote, long expected, long desired, A attachment,
                                   CompletionHandler<Long, ? super A> handler) {
        handlerOp(QueuePair.WR_ATOMIC_CMP_AND_SWP, null, remote, 0, expected, desired, attachment, handler, LONG_HANDLER);
    }

    public long compareAndSwapSync(RemoteRegion remote, long expected, long desired) {
        return syncLong(QueuePair.WR_ATOMIC_CMP_AND_SWP, remote, expected, desired);
    }

    /** 8-byte fetch-and-add at the start of {@code remote}; completes with the prior value. */
    public CompletableFuture<Long> fetchAndAdd(RemoteRegion remote, long delta) {
        return futureOp(QueuePair.WR_ATOMIC_FETCH_AND_ADD, null, remote, 0, delta, 0, LONG_FUTURE);
    }

    public <A> void fetchAndAdd(RemoteRegion remote, long delta, A attachment, CompletionHandler<Long, ? super A> handler) {
        handlerOp(QueuePair.WR_ATOMIC_FETCH_AND_ADD, null, remote, 0, delta, 0, attachment, handler, LONG_HANDLER);
    }

    public long fetchAndAddSync(RemoteRegion remote, long delta) {
        return syncLong(QueuePair.WR_ATOMIC_FETCH_AND_ADD, remote, delta, 0);
    }

    /**
     * Masked compare-and-swap on the 8 bytes at the start of {@code remote}: if
     * {@code (prior & compareMask) == (compare & compareMask)}, the bits of {@code swapMask} become
     * those of {@code swap} and the others stay. Completes with the prior value.
     *
     * <p>Where the device has no masked atomics (no upstream verbs device exposes them; see
     * {@link dev.jrdma.spi.DeviceCapabilities#maskedAtomics()}) this is emulated, as are
     * {@link #maskedFetchAndAdd} and {@link #atomicWrite}: each attempt is one RDMA
     * compare-and-swap of the whole word, expecting the value the previous attempt saw (the
     * first expects 0). The operation takes effect at the attempt whose CAS succeeds, or, when
     * the value seen needs no change, at the CAS that saw it. So it is atomic and linearisable
     * towards every other atomic on the word (native or emulated, from any peer), but not
     * towards plain RDMA writes or CPU stores to it. It is lock-free, not wait-free: under
     * contention it retries, and after the connection's timeout it fails with
     * {@link RdmaTimeoutException}. Each attempt is one round trip.
     */
    public CompletableFuture<Long> maskedCompareAndSwap(RemoteRegion remote, long compare, long compareMask, long swap,
                                                        long swapMask) {
        return emulatedFuture(EMU_MASKED_CAS, remote, compare, compareMask, swap, swapMask, LONG_FUTURE);
    }

    public <A> void maskedCompareAndSwap(RemoteRegion remote, long compare, long compareMask, long swap, long swapMask,
                                         A attachment, CompletionHandler<Long, ? super A> handler) {
        emulatedHandler(EMU_MASKED_CAS, remote, compare, compareMask, swap, swapMask, LONG_HANDLER, attachment, handler);
    }

    public long maskedCompareAndSwapSync(RemoteRegion remote, long compare, long compareMask, long swap, long swapMask) {
        return emulatedSync(EMU_MASKED_CAS, remote, compare, compareMask, swap, swapMask);
    }

    /**
     * Masked fetch-and-add on the 8 bytes at the start of {@code remote}: the word is a set of
     * fields, each ending at a set bit of {@code fieldBoundaryMask} (its most significant bit),
     * and {@code add} is added field by field, a carry never crossing into the next field.
     * Completes with the prior value. Emulated like {@link #maskedCompareAndSwap}.
     */
    public CompletableFuture<Long> maskedFetchAndAdd(RemoteRegion remote, long add, long fieldBoundaryMask) {
        return emulatedFuture(EMU_MASKED_FAA, remote, add, fieldBoundaryMask, 0, 0, LONG_FUTURE);
    }

    public <A> void maskedFetchAndAdd(RemoteRegion remote, long add, long fieldBoundaryMask, A attachment,
                                      CompletionHandler<Long, ? super A> handler) {
        emulatedHandler(EMU_MASKED_FAA, remote, add, fieldBoundaryMask, 0, 0, LONG_HANDLER, attachment, handler);
    }

    public long maskedFetchAndAddSync(RemoteRegion remote, long add, long fieldBoundaryMask) {
        return emulatedSync(EMU_MASKED_FAA, remote, add, fieldBoundaryMask, 0, 0);
    }

    /**
     * Writes {@code value} to the 8-byte aligned word at the start of {@code remote}, atomically
     * with respect to the other atomics on it: no reader through an atomic sees half of it. The
     * verbs devices here have no native atomic write ({@code IBV_WR_ATOMIC_WRITE} needs rdma-core
     * 45 and a device that has it), so it is a compare-and-swap loop (see {@link MaskedAtomics}).
     */
    public CompletableFuture<Void> atomicWrite(RemoteRegion remote, long value) {
        return emulatedFuture(EMU_ATOMIC_WRITE, remote, value, 0, 0, 0, VOID_FUTURE);
    }

    public <A> void atomicWrite(RemoteRegion remote, long value, A attachment, CompletionHandler<Void, ? super A> handler) {
        emulatedHandler(EMU_ATOMIC_WRITE, remote, value, 0, 0, 0, VOID_HANDLER, attachment, handler);
    }

    public void atomicWriteSync(RemoteRegion remote, long value) {
        emulatedSync(EMU_ATOMIC_WRITE, remote, value, 0, 0, 0);
    }

    private <T> CompletableFuture<T> emulatedFuture(byte emuKind, RemoteRegion remote, long a, long b, long c, long d, byte k) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            postEmulated(emuKind, remote, a, b, c, d, k, f, null);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    private <A> void emulatedHandler(byte emuKind, RemoteRegion remote, long a, long b, long c, long d, byte k,
                                     A attachment, CompletionHandler<?, ? super A> handler) {
        try {
            postEmulated(emuKind, remote, a, b, c, d, k, handler, attachment);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
        }
    }

    private long emulatedSync(byte emuKind, RemoteRegion remote, long a, long b, long c, long d) {
        SyncWaiter w = SyncWaiter.forThisThread(io);
        try {
            postEmulated(emuKind, remote, a, b, c, d, LONG_HANDLER, w, null);
        } catch (RuntimeException e) {
            w.reset();
            throw e;
        }
        return w.await(this);
    }

    // ---------------------------------------------------------------- flush

    /**
     * Completes once every write this connection posted before it to {@code remote}'s memory is
     * there: {@link FlushType#VISIBILITY}, visible to the peer's CPU; {@link FlushType#PERSISTENT},
     * also persistent, which only a peer that declared direct write to persistent memory
     * ({@link LocalRegion#declareDirectWriteToPmem()}) can promise: towards any other it fails with
     * {@link UnsupportedCapabilityException}.
     *
     * <p>As librpma does on devices without {@code IBV_WR_FLUSH}, it is a 1-byte RDMA read of
     * {@code remote} after the writes (the responder answers a read only after placing the
     * writes before it), so the region must grant {@link Access#REMOTE_READ}. On the software
     * providers it is a flush of its own, applied by the peer in order after the writes; for
     * PERSISTENT on a region that is a mapped file, the peer forces the range to storage
     * ({@link MemorySegment#force()}) before it answers.
     */
    public CompletableFuture<Void> flush(RemoteRegion remote, FlushType type) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        try {
            postFlush(remote, type, VOID_FUTURE, f, null);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    public <A> void flush(RemoteRegion remote, FlushType type, A attachment, CompletionHandler<Void, ? super A> handler) {
        try {
            postFlush(remote, type, VOID_HANDLER, handler, attachment);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
        }
    }

    public void flushSync(RemoteRegion remote, FlushType type) {
        SyncWaiter w = SyncWaiter.forThisThread(io);
        try {
            postFlush(remote, type, VOID_HANDLER, w, null);
        } catch (RuntimeException e) {
            w.reset();
            throw e;
        }
        w.await(this);
    }

    private void postFlush(RemoteRegion remote, FlushType type, byte k, Object completion, Object attachment) {
        Objects.requireNonNull(remote, "remote");
        Objects.requireNonNull(type, "type");
        if (type == FlushType.PERSISTENT && !remote.directWriteToPmem()) {
            throw new UnsupportedCapabilityException("PERSISTENT flush", deviceName(),
                    "the owner of " + remote + " did not declare direct write to persistent memory; "
                            + "only VISIBILITY can be promised towards it");
        }
        if (!remote.allows(Access.REMOTE_READ)) {
            throw new RemoteAccessException("flush of " + remote, "not attempted: a flush is a read after the writes, "
                    + "and the region's descriptor does not grant REMOTE_READ");
        }
        checkUsable("flush");
        synchronized (postLock) {
            awaitRoom(1, "flush");
            if (nativeFlush) {
                int slot = takeSlot(k, QueuePair.WR_FLUSH, completion, attachment);
                postSingle(slot, QueuePair.WR_FLUSH, 0, 0, 0, remote, type == FlushType.PERSISTENT ? 1 : 0,
                        remote.length(), 0, "flush");
                return;
            }
            int slot = takeSlot(k, QueuePair.WR_RDMA_READ, completion, attachment);
            postSingle(slot, QueuePair.WR_RDMA_READ, scratchAddress(slot), remote.length() == 0 ? 0 : 1,
                    scratchMr.lkey(), remote, 0, 0, 0, "flush");
        }
    }

    // ---------------------------------------------------------------- batches

    /** A chain of operations posted with one doorbell; see {@link Batch}. */
    public Batch batch() {
        return new Batch(this);
    }

    /**
     * Posts a batch: all its slots are taken at once, every request but the last is unsignaled,
     * and the chain goes to the device in one call. In RC the send queue completes in order, so
     * the last one's completion tells that all before it are done (see {@link #onCompletion}).
     */
    void submit(Batch b, BatchCompletion bc) {
        int n = b.size();
        if (n == 0) {
            bc.finish(null);
            return;
        }
        if (n > config.sendQueueDepth()) {
            throw new IllegalArgumentException("a batch of " + n + " operations does not fit the send queue of "
                    + config.sendQueueDepth() + " (ConnectionConfig.sendQueueDepth): split it");
        }
        for (int i = 0; i < n; i++) {
            validate(b.opcode[i], b.local[i], b.remote[i]);
        }
        checkUsable("batch");
        synchronized (postLock) {
            awaitRoom(n, "batch");
            for (int i = 0; i < n; i++) {
                int op = b.opcode[i];
                int slot = takeSlot(BATCH_MEMBER, op, bc, null);
                argA[slot] = i;
                boolean atomic = isAtomic(op);
                LocalRegion buf = b.local[i];
                RemoteRegion remote = b.remote[i];
                qp.stage(i, slot, op, i == n - 1 ? QueuePair.SEND_SIGNALED : 0,
                        atomic ? scratchAddress(slot) : buf.address(), atomic ? 8 : (int) buf.length(),
                        atomic ? scratchMr.lkey() : buf.lkey(), remote == null ? 0 : remote.address(),
                        remote == null ? 0 : remote.rkey(), b.compareAdd[i], b.swap[i], b.imm[i]);
                ringPush(slot);
            }
            int rc = qp.postStaged(n);
            if (rc != 0) {
                int posted = qp.firstUnposted();
                RdmaException e = new RdmaException("batch: ibv_post_send failed with errno " + rc + " at operation "
                        + posted + " of " + n + " (" + opName(b.opcode[posted]) + "; the QP is "
                        + QueuePair.stateName(qp.queryState()) + ")");
                // The ones not posted leave the ring (they were pushed last) and fail now; those
                // posted before them complete as usual. An unsignaled tail would never be reported,
                // so then the connection is put in error, which flushes them.
                for (int i = n - 1; i >= posted; i--) {
                    int slot = ringPopTail();
                    untakeSlot(slot);   // the last taken first: the reverse of taking
                    bc.member(i, e, 0);
                }
                if (posted > 0) {
                    markError(e);
                    qp.moveToError();
                }
            }
        }
    }

    // ---------------------------------------------------------------- posting

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

    private void syncVoid(int opcode, LocalRegion buf, RemoteRegion remote, int imm, long compareAdd, long swap) {
        SyncWaiter w = SyncWaiter.forThisThread(io);
        try {
            post(opcode, buf, remote, imm, compareAdd, swap, VOID_HANDLER, w, null);
        } catch (RuntimeException e) {
            w.reset();
            throw e;
        }
        w.await(this);
    }

    private long syncLong(int opcode, RemoteRegion remote, long compareAdd, long swap) {
        SyncWaiter w = SyncWaiter.forThisThread(io);
        try {
            post(opcode, null, remote, 0, compareAdd, swap, LONG_HANDLER, w, null);
        } catch (RuntimeException e) {
            w.reset();
            throw e;
        }
        return w.await(this);
    }

    static String opName(int opcode) {
        return switch (opcode) {
            case QueuePair.WR_SEND -> "send";
            case QueuePair.WR_SEND_WITH_IMM -> "sendWithImm";
            case QueuePair.WR_RDMA_WRITE -> "write";
            case QueuePair.WR_RDMA_WRITE_WITH_IMM -> "writeWithImm";
            case QueuePair.WR_RDMA_READ -> "read";
            case QueuePair.WR_ATOMIC_CMP_AND_SWP -> "compareAndSwap";
            case QueuePair.WR_ATOMIC_FETCH_AND_ADD -> "fetchAndAdd";
            case QueuePair.WR_FLUSH -> "flush";
            default -> "opcode " + opcode;
        };
    }

    private static boolean isAtomic(int opcode) {
        return opcode == QueuePair.WR_ATOMIC_CMP_AND_SWP || opcode == QueuePair.WR_ATOMIC_FETCH_AND_ADD;
    }

    /** Checks what can be checked here, so that bad input fails this operation only. */
    void validate(int opcode, LocalRegion buf, RemoteRegion remote) {
        String op = opName(opcode);
        boolean atomic = isAtomic(opcode);
        // Messages are built only on failure: this runs on every post.
        if (!atomic && buf == null) {
            throw new NullPointerException(op + ": the local region");
        }
        if (remote == null && opcode != QueuePair.WR_SEND && opcode != QueuePair.WR_SEND_WITH_IMM) {
            throw new NullPointerException(op + ": the remote region");
        }
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
            long leaseEnd = remote.leaseEndMillis();
            if (leaseEnd != 0 && System.currentTimeMillis() >= leaseEnd) {
                throw new RemoteAccessException(op + " to " + remote, "not attempted: its lease ended at "
                        + java.time.Instant.ofEpochMilli(leaseEnd));
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
        String op = opName(opcode);
        checkUsable(op);
        boolean atomic = isAtomic(opcode);
        synchronized (postLock) {
            awaitRoom(1, op);
            int slot = takeSlot(k, opcode, completion, attachment);
            if (atomic) {
                postSingle(slot, opcode, scratchAddress(slot), 8, scratchMr.lkey(), remote, compareAdd, swap, imm, op);
            } else {
                postSingle(slot, opcode, buf.address(), (int) buf.length(), buf.lkey(), remote, compareAdd, swap, imm, op);
            }
        }
    }

    /** Starts an emulated atomic: its first step is a compare-and-swap that assumes the word is 0. */
    private void postEmulated(byte emuKind, RemoteRegion remote, long a, long b, long c, long d, byte k,
                              Object completion, Object attachment) {
        String op = MaskedAtomics.name(emuKind);
        validate(QueuePair.WR_ATOMIC_CMP_AND_SWP, null, remote);
        checkUsable(op);
        synchronized (postLock) {
            awaitRoom(1, op);
            int slot = takeSlot(k, QueuePair.WR_ATOMIC_CMP_AND_SWP, completion, attachment);
            emu[slot] = emuKind;
            argA[slot] = a;
            argB[slot] = b;
            argC[slot] = c;
            argD[slot] = d;
            emuRemote[slot] = remote;
            emuDeadline[slot] = System.nanoTime() + config.timeout().toNanos();
            long desired = MaskedAtomics.next(emuKind, 0, a, b, c, d);
            expected[slot] = 0;
            postSingle(slot, QueuePair.WR_ATOMIC_CMP_AND_SWP, scratchAddress(slot), 8, scratchMr.lkey(), remote, 0,
                    desired, 0, op);
        }
    }

    /** Posts the request of {@code slot}, signaled; on failure frees the slot and throws. Under postLock. */
    private void postSingle(int slot, int opcode, long localAddr, int length, int lkey, RemoteRegion remote,
                            long compareAdd, long swap, int imm, String op) {
        ringPush(slot);
        int rc = qp.postSend(slot, opcode, QueuePair.SEND_SIGNALED, localAddr, length, lkey,
                remote == null ? 0 : remote.address(), remote == null ? 0 : remote.rkey(), compareAdd, swap, imm);
        if (rc != 0) {
            ringPopTail();
            untakeSlot(slot);
            throw new RdmaException(op + ": ibv_post_send failed with errno " + rc
                    + " (the QP is " + QueuePair.stateName(qp.queryState()) + ")");
        }
    }

    private long scratchAddress(int slot) {
        return scratchMr.memory().address() + 8L * slot;
    }

    private void checkUsable(String op) {
        if (state != ConnectionState.ESTABLISHED) {
            throw notUsable(op);
        }
    }

    /** Waits until {@code n} slots are free, up to the timeout; under postLock, never on the IO thread. */
    private void awaitRoom(int n, String op) {
        long deadline = 0;
        while (true) {
            if (state != ConnectionState.ESTABLISHED) {
                throw notUsable(op);
            }
            if (freeTail - freeHead >= n) {
                return;
            }
            if (io.inThisThread()) {
                throw new RdmaTimeoutException(op + ": the send queue is full (" + config.sendQueueDepth()
                        + " operations outstanding) and this is the IO thread, which must not wait for it");
            }
            long now = System.nanoTime();
            if (deadline == 0) {
                deadline = now + config.timeout().toNanos();
            } else if (now >= deadline) {
                throw new RdmaTimeoutException(op + ": the send queue stayed full ("
                        + config.sendQueueDepth() + " operations outstanding) for " + config.timeout());
            }
            waitingForSlot++;
            try {
                if (io.isInline()) {
                    // Progress is the caller's to drive: poll, keeping postLock (a callback of
                    // this pass that posts here re-enters it), and look again at once. Only
                    // while another thread is in a pass, give the lock up for a while: that
                    // pass frees the slots, and its callbacks may post here.
                    if (io.poll() == 0 && io.polledElsewhere()) {
                        postLock.wait(1);
                    } else {
                        Thread.onSpinWait();
                    }
                } else {
                    // 1 ms at most: the completing thread reads waitingForSlot without a fence
                    // after freeing a slot, so a notify may be missed; the next look is then soon.
                    postLock.wait(1);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaException(op + ": interrupted while waiting for room in the send queue");
            } finally {
                waitingForSlot--;
            }
        }
    }

    /** Takes a free slot; under postLock, after awaitRoom. */
    private int takeSlot(byte k, int opcode, Object completion, Object attachment) {
        int slot = freeRing[(int) freeHead & freeMask];
        freeHead++;
        kind[slot] = k;
        opcodeOf[slot] = (byte) opcode;
        futures[slot] = completion;
        attachments[slot] = attachment;
        return slot;
    }

    private void clearSlot(int slot) {
        futures[slot] = null;
        attachments[slot] = null;
        emuRemote[slot] = null;
        kind[slot] = 0;
        emu[slot] = EMU_NONE;
    }

    /** Returns a finished slot; on the completing thread only. */
    private void freeSlot(int slot) {
        clearSlot(slot);
        long t = freeTail;
        freeRing[(int) t & freeMask] = slot;
        FREE_TAIL.setRelease(this, t + 1);
        if (waitingForSlot > 0) {
            synchronized (postLock) {
                postLock.notifyAll();
            }
        }
    }

    /** Gives back {@code slot}, the last one taken and never posted; under postLock. */
    private void untakeSlot(int slot) {
        clearSlot(slot);
        freeHead--;
        assert freeRing[(int) freeHead & freeMask] == slot;
    }

    /** Adds {@code slot} after the others in flight; under postLock, before it is posted. */
    private void ringPush(int slot) {
        long t = postTail;
        postRing[(int) t & postMask] = slot;
        POST_TAIL.setRelease(this, t + 1);
    }

    /** Takes back the slot this thread just pushed (its post failed); under postLock. */
    private int ringPopTail() {
        long t = postTail - 1;
        POST_TAIL.setRelease(this, t);
        return postRing[(int) t & postMask];
    }

    /** The oldest slot in flight; on the completing thread, when postHead != postTail. */
    private int ringPopHead() {
        int slot = postRing[(int) postHead & postMask];
        postHead++;
        return slot;
    }

    /** Nothing outstanding any more: every send-queue operation and every receive completed. */
    private boolean drained() {
        synchronized (postLock) {
            return freeTail - freeHead == depth && postedReceives == 0;
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

    // Fields of the completion being finished; the IO thread's alone (no re-entry: callbacks run
    // on it, *Sync calls are refused there, and IoThread.poll does not nest).
    private byte doneKind;
    private Object doneCompletion;
    private Object doneAttachment;
    private long doneValue;
    private int doneIndex;
    private int doneOpcode;
    /** Why the emulated atomic of the completion being handled failed; null when it did not. */
    private RdmaException emulationFailure;

    /** Loads the finished operation of {@code slot} into the done* fields and frees the slot. On the completing thread. */
    private void takeDone(int slot) {
        doneKind = kind[slot];
        doneCompletion = futures[slot];
        doneAttachment = attachments[slot];
        doneOpcode = opcodeOf[slot];
        doneIndex = (int) argA[slot];
        boolean atomicResult = isAtomic(opcodeOf[slot]) || emu[slot] != EMU_NONE;
        doneValue = atomicResult ? scratchMr.memory().get(ValueLayout.JAVA_LONG, 8L * slot) : 0;
        freeSlot(slot);
    }

    private void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
        completions++;
        if ((wrId & RECV_FLAG) != 0) {
            onReceiveCompletion((int) (wrId & 0xffff_ffffL), status, opcode, byteLen, imm, withImm);
            return;
        }
        int slot = (int) wrId;
        emulationFailure = null;
        // One monitor enter per completion in the usual case (this slot is the oldest outstanding):
        // the lock is most of what a completion costs.
        while (true) {
            if (postHead == postTail) {
                LOG.log(System.Logger.Level.ERROR, "completion for slot {0} of {1} with nothing outstanding", slot, this);
                return;
            }
            int oldest = ringPopHead();
            if (oldest == slot) {
                if (status == WorkCompletion.SUCCESS && emu[slot] != EMU_NONE) {
                    boolean continued;
                    synchronized (postLock) {   // it posts: serialised with the posters
                        continued = continueEmulation(slot);
                    }
                    if (continued) {
                        return;   // the next compare-and-swap is posted on the same slot
                    }
                }
                takeDone(slot);
                break;
            }
            // RC completes a send queue in order: unsignaled requests posted before this one are done.
            takeDone(oldest);
            finish(doneKind, doneCompletion, doneAttachment, doneValue, doneIndex, null);
        }
        if (emulationFailure != null) {
            finish(doneKind, doneCompletion, doneAttachment, 0, doneIndex, emulationFailure);
            return;
        }
        if (status == WorkCompletion.SUCCESS) {
            finish(doneKind, doneCompletion, doneAttachment, doneValue, doneIndex, null);
            return;
        }
        RdmaException e;
        String what = opName(doneOpcode) + " on the connection to " + remoteAddress;
        if (status == WorkCompletion.WR_FLUSH_ERR && failure != null) {
            e = closedBecause(failure);
        } else {
            String name = WorkCompletion.statusName(status);
            if (status == WorkCompletion.RETRY_EXC_ERR) {
                e = new ConnectionClosedException(what + " failed with " + name + ": the peer did not answer within "
                        + config.retryCount() + " retries, it is gone or unreachable");
            } else if (status == WorkCompletion.REM_ACCESS_ERR) {
                e = new RemoteAccessException(what, name);
            } else {
                e = new WorkCompletionException(what, name);
            }
            markError(e);
        }
        finish(doneKind, doneCompletion, doneAttachment, 0, doneIndex, e);
    }

    /**
     * One step of an emulated atomic whose compare-and-swap just returned the word's value
     * {@code v}: done when that CAS took effect ({@code v} is what it expected) or when {@code v}
     * needs no change; else the next CAS goes out on the same slot. Returns true when it was
     * posted; false when the operation is over: done, or failed with {@link #emulationFailure}.
     * Under postLock.
     */
    private boolean continueEmulation(int slot) {
        long v = scratchMr.memory().get(ValueLayout.JAVA_LONG, 8L * slot);
        if (v == expected[slot]) {
            return false;
        }
        byte e = emu[slot];
        long desired = MaskedAtomics.next(e, v, argA[slot], argB[slot], argC[slot], argD[slot]);
        if (desired == v) {
            return false;   // the CAS read v atomically, and v needs no change: that is the result
        }
        String op = MaskedAtomics.name(e);
        if (System.nanoTime() > emuDeadline[slot]) {
            emulationFailure = new RdmaTimeoutException(op + " on the connection to " + remoteAddress
                    + " gave up: the word kept changing under its compare-and-swap for " + config.timeout());
            return false;
        }
        if (state != ConnectionState.ESTABLISHED) {
            emulationFailure = notUsable(op);
            return false;
        }
        RemoteRegion remote = emuRemote[slot];
        expected[slot] = v;
        ringPush(slot);
        int rc = qp.postSend(slot, QueuePair.WR_ATOMIC_CMP_AND_SWP, QueuePair.SEND_SIGNALED, scratchAddress(slot), 8,
                scratchMr.lkey(), remote.address(), remote.rkey(), v, desired, 0);
        if (rc != 0) {
            ringPopTail();
            emulationFailure = new RdmaException(op + ": ibv_post_send failed with errno " + rc);
            return false;
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    private static void finish(byte k, Object completion, Object attachment, long value, int index, RdmaException e) {
        switch (k) {
            case VOID_FUTURE, LONG_FUTURE -> {
                CompletableFuture<Object> f = (CompletableFuture<Object>) completion;
                if (e != null) {
                    f.completeExceptionally(e);
                } else {
                    f.complete(k == LONG_FUTURE ? (Object) value : null);
                }
            }
            case VOID_HANDLER, LONG_HANDLER -> {
                if (completion instanceof SyncWaiter w) {
                    w.done(value, e);
                } else if (e != null) {
                    ((CompletionHandler<Object, Object>) completion).failed(e, attachment);
                } else {
                    ((CompletionHandler<Object, Object>) completion).completed(k == LONG_HANDLER ? (Object) value : null,
                            attachment);
                }
            }
            case BATCH_MEMBER -> ((BatchCompletion) completion).member(index, e, value);
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
        lentMessages.incrementAndGet();
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
        if (lentMessages.decrementAndGet() == 0 && memoryFreeWanted) {
            freeMemory();
        }
    }

    /**
     * Frees the receive buffers and scratch words, once the connection is released and no
     * message is lent out (a {@link Message}'s data stays valid until it is closed, also when
     * the connection ends first). Idempotent.
     */
    synchronized void freeMemory() {
        if (memory != null) {
            memory.close();
            memory = null;
            rdma.memoryFreed(this);
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

    /**
     * The device reported a fatal event for this QP: the connection is in ERROR, and the QP is
     * put in error, so every outstanding operation completes (flushed) with that cause.
     */
    void deviceFailed(String why) {
        markError(new ConnectionClosedException("the connection to " + remoteAddress + " failed: " + why));
        if (qp != null && !released.isDone()) {
            try {
                qp.moveToError();
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.DEBUG, "moving the QP to error: {0}", e.getMessage());
            }
        }
    }

    /** The peer disconnected (or the device went away): flush, fail, free. On the IO thread. */
    void peerDisconnected() {
        ConnectionClosedException why = new ConnectionClosedException("the peer at " + remoteAddress + " disconnected");
        if (failure == null) {
            failure = why;   // the reason, before the drain below meets requests the device flushed
        }
        // What the peer sent before it left comes first, as on a wire: on shm its last acks and
        // messages sit in the shared ring while its socket already says it closed. Take them
        // (on this connection's IO thread, where this runs) before failing what is outstanding;
        // not from inside a poll, whose queue pair found the end in its stream, after the rest.
        if (cq != null && !polling && !tearingDown && !released.isDone()) {
            for (int i = 0; i < 64; i++) {
                if (cq.poll(sink, 32) == 0) {
                    break;
                }
            }
        }
        startTeardown(why);
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
        teardownDeadline = System.nanoTime() + TEARDOWN_NANOS;
        if (cq == null) {
            release();
        }
    }

    /** The {@code Rdma} this connection belongs to. */
    Rdma rdma() {
        return rdma;
    }

    /** The queue pair of this established connection, for a registration scoped to it; {@code op} names the call. */
    QueuePair establishedQueuePair(String op) {
        ConnectionState s = state;   // read first: it is written after qp
        QueuePair q = qp;
        if (s != ConnectionState.ESTABLISHED || q == null) {
            throw new ConnectionClosedException(op + ": the connection to " + remoteAddress + " is " + s);
        }
        return q;
    }

    /** What runs once when this connection is released (scoped exposures ending); any thread adds and removes. */
    private final java.util.Set<Runnable> releaseHooks = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Runs {@code r} once this connection is released (at once, here, if it is already). */
    void addReleaseHook(Runnable r) {
        releaseHooks.add(r);
        if (released.isDone() && releaseHooks.remove(r)) {   // whoever removes it runs it
            r.run();
        }
    }

    /** Release hooks waiting: for tests. */
    int releaseHookCount() {
        return releaseHooks.size();
    }

    /** {@code r} is not to run any more (what it would end ended otherwise). */
    void removeReleaseHook(Runnable r) {
        releaseHooks.remove(r);
    }

    /** Frees everything; fails what is still outstanding (it should be nothing after the flush). */
    private void release() {
        if (released.isDone()) {
            return;
        }
        state = ConnectionState.CLOSED;
        io.remove(source);
        RdmaException why = failure != null ? failure : new ConnectionClosedException("connection closed");
        RdmaException closed = closedBecause(why);
        for (int slot = 0; slot < kind.length; slot++) {
            synchronized (postLock) {   // state is CLOSED: no poster takes a slot any more
                if (kind[slot] == 0) {
                    continue;
                }
                takeDone(slot);
            }
            finish(doneKind, doneCompletion, doneAttachment, 0, doneIndex, closed);
        }
        postHead = postTail;
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
        memoryFreeWanted = true;
        if (lentMessages.get() == 0) {
            freeMemory();
        } else {
            rdma.memoryHeld(this);   // freed when the last lent message closes, or when the Rdma closes
        }
        rdma.forget(this);
        if (server != null) {
            server.forget(this);
        }
        released.complete(null);
        for (Runnable hook : releaseHooks) {
            if (releaseHooks.remove(hook)) {
                try {
                    hook.run();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "ending an exposure to the connection to " + remoteAddress + " failed", e);
                }
            }
        }
        Consumer<Connection> cb = onDisconnect;
        if (cb != null && connected.isDone() && !connected.isCompletedExceptionally()) {
            try {
                cb.accept(this);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "onDisconnect callback threw", e);
            }
        }
    }

    /** How long a teardown waits for the flush of what is outstanding before it frees all the same. */
    static final long TEARDOWN_NANOS = TimeUnit.SECONDS.toNanos(5);

    /**
     * Disconnects: every outstanding operation and receive completes (with
     * {@link ConnectionClosedException}), the peer sees the disconnect, and everything is freed.
     * Idempotent. Waits (unless called on the IO thread) for the teardown, which never waits for
     * the peer: at most {@link #TEARDOWN_NANOS 5 s} plus a second; if the IO thread has not
     * finished by then (it is overloaded), close returns anyway, says so in the log, and the
     * teardown ends in the background. Close never throws because a peer was slow.
     */
    @Override
    public void close() {
        CompletableFuture<Void> done = closeAsync();
        if (done.isDone() || io.inThisThread()) {
            return;
        }
        try {
            io.await(released, TEARDOWN_NANOS + TimeUnit.SECONDS.toNanos(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, "closing the connection to {0}: not finished after {1} s; it goes on"
                    + " in the background (its queue pair is in error: the peer reaches nothing of it)", remoteAddress,
                    TimeUnit.NANOSECONDS.toSeconds(TEARDOWN_NANOS) + 1);
        }
    }

    /**
     * Starts {@link #close()} without waiting: the future completes when the connection is
     * released (everything outstanding completed, everything freed). For closing many at once.
     */
    public CompletableFuture<Void> closeAsync() {
        if (released.isDone()) {
            return released.copy();
        }
        io.execute(() -> {
            if (state == ConnectionState.CONNECTING) {
                failConnect(new ConnectionClosedException("connection to " + remoteAddress + " closed while connecting"));
            } else {
                startTeardown(new ConnectionClosedException("the connection to " + remoteAddress + " was closed by this side"));
            }
        });
        return released.copy();
    }

    CompletableFuture<Void> released() {
        return released;
    }

    @Override
    public String toString() {
        return "Connection[" + remoteAddress + ", " + state + "]";
    }
}
