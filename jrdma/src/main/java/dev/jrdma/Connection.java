package dev.jrdma;

import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.MemoryWindow;
import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
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
 *
 * <p><b>Completions.</b> Every operation completes exactly once, except one posted with
 * {@link Completion#ON_ERROR} (the handler forms take it): that one reports only its failure,
 * which is never lost, and its success is told by the next operation that completes after it
 * (the send queue completes in order). See {@link Completion}.
 *
 * <p><b>Reconnecting.</b> A client connection whose config has a {@link ReconnectPolicy}
 * connects again after it fails, and stays this same object: underneath, each connect is a new
 * queue pair (a <i>life</i>), and this object forwards to the current one. Nothing is replayed.
 * See {@link ConnectionConfig.Builder#reconnect(ReconnectPolicy, ConnectionListener)}.
 */
public final class Connection implements AutoCloseable {
    private final Rdma rdma;
    final IoThread io;
    private final ConnectionConfig config;
    private final InetSocketAddress remoteAddress;
    final RdmaServer server;
    // The parts: how it lives and dies, what it posts, what it receives, and who finishes what.
    final ConnectionLife life;
    final SendQueue sends;   // PostForms posts through it
    private final ReceiveQueue receives;
    /** What this life has done, counted (see {@link #statistics()}). */
    private final ConnectionCounters counters = new ConnectionCounters();
    /**
     * The object the application holds: this one, or for a life after a reconnect, the first
     * life's. Callbacks and messages name it, not the life.
     */
    private final Connection handle;
    /** On the handle: the current life, which operations go to (this one until a reconnect). */
    private volatile Connection live = this;
    /** On a handle with a reconnect policy: what connects again; null otherwise. */
    final Reconnector reconnector;
    /** On the handle: the application's callbacks, applied to every life. */
    private volatile Consumer<Connection> onDisconnect;
    private volatile BiConsumer<Connection, Message> onReceive;

    Connection(Rdma rdma, IoThread io, ConnectionConfig config, InetSocketAddress remoteAddress, RdmaServer server) {
        this(rdma, io, config, remoteAddress, server, null);
    }

    /** A connection; a further life of {@code handle} when it is not null. */
    Connection(Rdma rdma, IoThread io, ConnectionConfig config, InetSocketAddress remoteAddress, RdmaServer server,
               Connection handle) {
        this.rdma = rdma;
        this.io = io;
        this.config = config;
        this.remoteAddress = remoteAddress;
        this.server = server;
        this.life = new ConnectionLife(this, io, remoteAddress, rdma.clock());
        this.sends = new SendQueue(life, config, io, counters);
        this.receives = new ReceiveQueue(this, life, sends.postLock, config, counters);
        life.parts(sends, receives, new CompletionDispatch(life, sends, receives, config, counters));
        this.handle = handle == null ? this : handle;
        this.reconnector = handle == null && server == null && config.reconnect().reconnects()
                ? new Reconnector(this, rdma, remoteAddress, config) : null;
    }

    // ---------------------------------------------------------------- information

    /**
     * {@return the state; {@link ConnectionState#CONNECTING} also while a connection with a reconnect
     * policy connects again}
     */
    public ConnectionState state() {
        Reconnector r = reconnector;
        return r != null && r.reconnecting() ? ConnectionState.CONNECTING : live.life.state();
    }

    /** {@return the peer's address: the one connected to, or for an accepted connection the client's} */
    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    /**
     * {@return this end's address (the local IP and port the connection manager used), once the connection
     * is established; null before, or when the provider cannot tell}
     */
    public InetSocketAddress localAddress() {
        return live.life.localAddress();
    }

    /** {@return the configuration this connection was made with} */
    public ConnectionConfig config() {
        return config;
    }

    /** {@return the application bytes the peer sent with its request or accept (empty when none)} */
    public byte[] peerPrivateData() {
        return live.life.peer().data().clone();
    }

    /**
     * {@return how many receives the peer keeps posted, when it told us (a jrdma peer does); -1 when
     * unknown} More sends than this in flight at once can meet a receiver-not-ready wait.
     */
    public int peerReceiveQueueDepth() {
        return live.life.peer().receiveDepth();
    }

    /**
     * {@return the largest message the peer receives, when it told us (a jrdma peer does); -1 when
     * unknown}
     */
    public int peerReceiveBufferSize() {
        return live.life.peer().receiveBufferSize();
    }

    /**
     * {@return which of its {@code Rdma}'s IO threads serves it, 0-based: its completions and callbacks
     * run there; for an instance with IO loops, the index of {@link Rdma#ioLoop(int)}}
     */
    public int ioIndex() {
        return rdma.io().indexOf(io);
    }

    /** {@return the QP: number, state as the device reports it now, and what was negotiated} */
    public QueuePairInfo queuePair() {
        ConnectionLife life = live.life;
        QueuePair q = life.queuePair();
        ConnectionState state = life.state();
        if (q == null) {
            throw new ConnectionClosedException("connection to " + remoteAddress + " has no queue pair (" + state + ")");
        }
        QueuePairSpec g = q.granted();
        boolean closed = state == ConnectionState.CLOSED;
        // What the device applies, where it says (verbs): rdma_cm may have set other values than asked.
        int retry = closed ? -1 : q.queryRetryCount(), rnr = closed ? -1 : q.queryRnrRetry();
        return new QueuePairInfo(q.qpNum(), QueuePair.stateName(closed ? QueuePair.STATE_ERR : q.queryState()),
                g.sendDepth(), g.recvDepth(), g.maxInlineData(), g.initiatorDepth(), g.responderResources(),
                retry >= 0 ? retry : g.retryCount(), rnr >= 0 ? rnr : g.rnrRetry(), closed ? -1 : q.queryAckTimeout(),
                closed ? -1 : q.queryMinRnrTimer(), closed ? -1 : q.queryTrafficClass(), closed ? -1 : q.queryServiceLevel(),
                closed ? -1 : q.queryFlowLabel());
    }

    /**
     * {@return what the connection has done: operations and bytes by kind, failures, errors by
     * status, what is outstanding now and sampled completion latencies} A snapshot, from any
     * thread, at any time (after the close too); counting costs the data path plain increments
     * only. With a {@link ReconnectPolicy}, the counts are the current queue pair's.
     */
    public ConnectionStatistics statistics() {
        return live.statisticsOfThisLife();
    }

    /** The counts of this life (not the handle's current one). */
    ConnectionCounters counters() {
        return counters;
    }

    /** The statistics of this life (not the handle's current one). */
    ConnectionStatistics statisticsOfThisLife() {
        return counters.snapshot(sends.slots.outstanding());
    }

    /**
     * {@return the first failure, once the connection is in ERROR or CLOSED (or reconnecting: the failure
     * behind it); null before}
     */
    public RdmaException failure() {
        return live.life.failure();
    }

    /**
     * Called (on the IO thread) when the connection goes down for any reason after being
     * established; with a reconnect policy, each time it goes down.
     *
     * @param callback called on the IO thread (null: none)
     * @return this connection
     */
    public Connection onDisconnect(Consumer<Connection> callback) {
        onDisconnect = callback;
        return this;
    }

    // ---------------------------------------------------------------- two-sided

    /**
     * Sends {@code buf} as one message; the peer receives it in a posted receive.
     *
     * @param buf the bytes to send (registered memory, its whole length)
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> send(LocalRegion buf) {
        return PostForms.future(live, Operation.SEND, buf, null, 0, 0, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #send(LocalRegion)}: {@code handler} gets null on success.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to send (registered memory, its whole length)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void send(LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.SEND, buf, null, 0, 0, 0, 0, 0, attachment, handler);
    }

    /**
     * {@link #send(LocalRegion, Object, CompletionHandler)}, reporting as {@code when} says: with
     * {@link Completion#ON_ERROR} only a failure, and {@code handler} may be null.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to send (registered memory, its whole length)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void send(LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler, Completion when) {
        PostForms.handler(live, Operation.SEND, buf, null, 0, 0, 0, 0, 0, attachment, handler, when);
    }

    /**
     * {@link #send(LocalRegion)}, waiting in the caller.
     *
     * @param buf the bytes to send (registered memory, its whole length)
     */
    public void sendSync(LocalRegion buf) {
        PostForms.sync(live, Operation.SEND, buf, null, 0, 0, 0, 0, 0);
    }

    /**
     * Sends {@code buf} with a 32-bit immediate value the receiver sees in {@link Message#imm()}.
     *
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param buf the bytes to send (registered memory, its whole length)
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> sendWithImm(int imm, LocalRegion buf) {
        return PostForms.future(live, Operation.SEND_WITH_IMM, buf, null, imm, 0, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #sendWithImm(int, LocalRegion)}: {@code handler} gets null on
     * success, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param buf the bytes to send (registered memory, its whole length)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void sendWithImm(int imm, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.SEND_WITH_IMM, buf, null, imm, 0, 0, 0, 0, attachment, handler);
    }

    /**
     * With {@link Completion#ON_ERROR}, only a failure is reported, and {@code handler} may be null.
     *
     * @param <A> the type of the attachment
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param buf the bytes to send (registered memory, its whole length)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void sendWithImm(int imm, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler,
                                Completion when) {
        PostForms.handler(live, Operation.SEND_WITH_IMM, buf, null, imm, 0, 0, 0, 0, attachment, handler, when);
    }

    /**
     * {@link #sendWithImm(int, LocalRegion)}, waiting in the caller.
     *
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param buf the bytes to send (registered memory, its whole length)
     */
    public void sendWithImmSync(int imm, LocalRegion buf) {
        PostForms.sync(live, Operation.SEND_WITH_IMM, buf, null, imm, 0, 0, 0, 0);
    }

    /**
     * Sets a callback for every received message (SEND, or WRITE_WITH_IMM notice), on the IO
     * thread; the message is closed when it returns, and the same {@link Message} object may carry
     * the next message to the next call (the receive path makes no object per message): keep its
     * bytes or immediate value, not the message. Messages that arrived before are handed to it
     * first. With a callback set, {@link #receive()} is not for use; {@code null} takes the
     * callback away, and messages that arrive from then on go to {@link #receive()} again.
     *
     * @param callback called on the IO thread (null: none)
     * @return this connection
     */
    public Connection onReceive(BiConsumer<Connection, Message> callback) {
        onReceive = callback;
        live.receives.onReceive(callback);
        return this;
    }

    /** {@return the next received message; close it to give its buffer back} */
    public CompletableFuture<Message> receive() {
        return live.receives.receive();
    }

    // ---------------------------------------------------------------- regions

    /**
     * Hands {@code region} to the peer (async-rdma's {@code send_remote_mr}): its descriptor goes
     * as one message, which the peer takes with {@link #receiveRegion()}. To lend it for a while
     * only, send a {@link LocalRegion#lease lease}.
     *
     * @param region the region whose descriptor goes to the peer
     * @return a future that completes when the operation did, or exceptionally with what failed
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

    /**
     * {@link #sendRegion(RemoteRegion)} of {@code region.toRemote()}: the peer gets its default rights.
     *
     * @param region the region whose descriptor goes to the peer
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> sendRegion(LocalRegion region) {
        return sendRegion(region.toRemote());
    }

    /**
     * {@return the next received message, read as a region descriptor the peer sent with {@link
     * #sendRegion}} A message that is not one (wrong size, magic, version or checksum) fails the future
     * with an {@code IllegalArgumentException} saying what is wrong; it is consumed, and the connection
     * stays up.
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

    /**
     * Writes all of {@code buf} to the start of {@code remote}.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> write(LocalRegion buf, RemoteRegion remote) {
        return PostForms.future(live, Operation.WRITE, buf, remote, 0, 0, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #write(LocalRegion, RemoteRegion)}: {@code handler} gets null on success.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void write(LocalRegion buf, RemoteRegion remote, A attachment, CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.WRITE, buf, remote, 0, 0, 0, 0, 0, attachment, handler);
    }

    /**
     * {@link #write(LocalRegion, RemoteRegion, Object, CompletionHandler)}, reporting as
     * {@code when} says: with {@link Completion#ON_ERROR} only a failure, and {@code handler} may
     * be null; a later ALWAYS operation or {@link #flush} tells that it is done.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void write(LocalRegion buf, RemoteRegion remote, A attachment, CompletionHandler<Void, ? super A> handler,
                          Completion when) {
        PostForms.handler(live, Operation.WRITE, buf, remote, 0, 0, 0, 0, 0, attachment, handler, when);
    }

    /**
     * A write done during the call where it can be, as UCX's {@code ucp_put_nbx} returns UCS_OK.
     * True: the bytes are in the peer's memory, in order after this connection's earlier
     * operations, and {@code handler} is never called (no completion follows). False: the write is
     * posted, and {@code handler} is called once, later, as by
     * {@link #write(LocalRegion, RemoteRegion, Object, CompletionHandler)} (bad input and a closed
     * connection: before this returns; no handler: NullPointerException, nothing posted). Done during
     * the call only on shm, whose peer region is mapped here, from the owner thread of an
     * {@link Rdma.Builder#singleThreaded} instance, with nothing of the connection on its way.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when a write that was not done during the call completed or failed
     * @return whether the write was done during the call
     */
    public <A> boolean writeOrPost(LocalRegion buf, RemoteRegion remote, A attachment, CompletionHandler<Void, ? super A> handler) {
        return PostForms.doneOrHandler(live, Operation.WRITE, buf, remote, attachment, handler);
    }

    /**
     * {@link #write(LocalRegion, RemoteRegion)}, waiting in the caller.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     */
    public void writeSync(LocalRegion buf, RemoteRegion remote) {
        PostForms.sync(live, Operation.WRITE, buf, remote, 0, 0, 0, 0, 0);
    }

    /**
     * Writes {@code buf} to {@code remote}; the peer gets a message with {@code imm} and the byte count.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param imm the 32-bit immediate value the peer's receive carries
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> writeWithImm(LocalRegion buf, RemoteRegion remote, int imm) {
        return PostForms.future(live, Operation.WRITE_WITH_IMM, buf, remote, imm, 0, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #writeWithImm(LocalRegion, RemoteRegion, int)}: {@code handler}
     * gets null on success, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void writeWithImm(LocalRegion buf, RemoteRegion remote, int imm, A attachment,
                                 CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.WRITE_WITH_IMM, buf, remote, imm, 0, 0, 0, 0, attachment, handler);
    }

    /**
     * With {@link Completion#ON_ERROR}, only a failure is reported, and {@code handler} may be null.
     *
     * @param <A> the type of the attachment
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param imm the 32-bit immediate value the peer's receive carries
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void writeWithImm(LocalRegion buf, RemoteRegion remote, int imm, A attachment,
                                 CompletionHandler<Void, ? super A> handler, Completion when) {
        PostForms.handler(live, Operation.WRITE_WITH_IMM, buf, remote, imm, 0, 0, 0, 0, attachment, handler, when);
    }

    /**
     * {@link #writeWithImm(LocalRegion, RemoteRegion, int)}, waiting in the caller.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param remote where the bytes go in the peer's memory
     * @param imm the 32-bit immediate value the peer's receive carries
     */
    public void writeWithImmSync(LocalRegion buf, RemoteRegion remote, int imm) {
        PostForms.sync(live, Operation.WRITE_WITH_IMM, buf, remote, imm, 0, 0, 0, 0);
    }

    /**
     * Reads {@code buf.length()} bytes from the start of {@code remote} into {@code buf}.
     *
     * @param remote the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> read(RemoteRegion remote, LocalRegion buf) {
        return PostForms.future(live, Operation.READ, buf, remote, 0, 0, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #read(RemoteRegion, LocalRegion)}: {@code handler} gets null once
     * the data is in {@code buf}, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void read(RemoteRegion remote, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.READ, buf, remote, 0, 0, 0, 0, 0, attachment, handler);
    }

    /**
     * With {@link Completion#ON_ERROR}, only a failure is reported, and {@code handler} may be
     * null; the data is in {@code buf} once a later ALWAYS operation completed.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void read(RemoteRegion remote, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler,
                         Completion when) {
        PostForms.handler(live, Operation.READ, buf, remote, 0, 0, 0, 0, 0, attachment, handler, when);
    }

    /**
     * A read done during the call where it can be (see
     * {@link #writeOrPost(LocalRegion, RemoteRegion, Object, CompletionHandler)}): true when the
     * bytes are in {@code buf} already and {@code handler} is never called; false when
     * {@code handler} is called once, later.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when a read that was not done during the call completed or failed
     * @return whether the read was done during the call
     */
    public <A> boolean readOrPost(RemoteRegion remote, LocalRegion buf, A attachment, CompletionHandler<Void, ? super A> handler) {
        return PostForms.doneOrHandler(live, Operation.READ, buf, remote, attachment, handler);
    }

    /**
     * {@link #read(RemoteRegion, LocalRegion)}, waiting in the caller: the data is in {@code buf} when
     * it returns.
     *
     * @param remote the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     */
    public void readSync(RemoteRegion remote, LocalRegion buf) {
        PostForms.sync(live, Operation.READ, buf, remote, 0, 0, 0, 0, 0);
    }

    // ---------------------------------------------------------------- atomics

    /**
     * 8-byte compare-and-swap at the start of {@code remote}; completes with the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @return a future of the prior value of the word
     */
    public CompletableFuture<Long> compareAndSwap(RemoteRegion remote, long expected, long desired) {
        return PostForms.future(live, Operation.COMPARE_AND_SWAP, null, remote, 0, expected, desired, 0, 0);
    }

    /**
     * Allocation-free form of {@link #compareAndSwap(RemoteRegion, long, long)}: {@code handler} gets
     * the prior value, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void compareAndSwap(RemoteRegion remote, long expected, long desired, A attachment,
                                   CompletionHandler<Long, ? super A> handler) {
        PostForms.handler(live, Operation.COMPARE_AND_SWAP, null, remote, 0, expected, desired, 0, 0, attachment, handler);
    }

    /**
     * {@link #compareAndSwap(RemoteRegion, long, long)} with the prior value unboxed: nothing allocated.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void compareAndSwap(RemoteRegion remote, long expected, long desired, A attachment,
                                   LongCompletionHandler<? super A> handler) {
        PostForms.primitive(live, Operation.COMPARE_AND_SWAP, remote, expected, desired, 0, 0, attachment, handler);
    }

    /**
     * With {@link Completion#ON_ERROR}, only a failure is reported (the prior value is not), and
     * {@code handler} may be null.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void compareAndSwap(RemoteRegion remote, long expected, long desired, A attachment,
                                   CompletionHandler<Long, ? super A> handler, Completion when) {
        PostForms.handler(live, Operation.COMPARE_AND_SWAP, null, remote, 0, expected, desired, 0, 0, attachment, handler, when);
    }

    /**
     * {@link #compareAndSwap(RemoteRegion, long, long)}, waiting in the caller; returns the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @return the prior value of the word
     */
    public long compareAndSwapSync(RemoteRegion remote, long expected, long desired) {
        return PostForms.sync(live, Operation.COMPARE_AND_SWAP, null, remote, 0, expected, desired, 0, 0);
    }

    /**
     * 8-byte fetch-and-add at the start of {@code remote}; completes with the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param delta what to add (64-bit, wrapping)
     * @return a future of the prior value of the word
     */
    public CompletableFuture<Long> fetchAndAdd(RemoteRegion remote, long delta) {
        return PostForms.future(live, Operation.FETCH_AND_ADD, null, remote, 0, delta, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #fetchAndAdd(RemoteRegion, long)}: {@code handler} gets the prior
     * value, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param delta what to add (64-bit, wrapping)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void fetchAndAdd(RemoteRegion remote, long delta, A attachment, CompletionHandler<Long, ? super A> handler) {
        PostForms.handler(live, Operation.FETCH_AND_ADD, null, remote, 0, delta, 0, 0, 0, attachment, handler);
    }

    /**
     * {@link #fetchAndAdd(RemoteRegion, long)} with the prior value unboxed: nothing allocated.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param delta what to add (64-bit, wrapping)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void fetchAndAdd(RemoteRegion remote, long delta, A attachment, LongCompletionHandler<? super A> handler) {
        PostForms.primitive(live, Operation.FETCH_AND_ADD, remote, delta, 0, 0, 0, attachment, handler);
    }

    /**
     * With {@link Completion#ON_ERROR}, only a failure is reported (the prior value is not), and
     * {@code handler} may be null.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param delta what to add (64-bit, wrapping)
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     * @param when {@link Completion#ALWAYS}, or {@link Completion#ON_ERROR} to hear of a failure only
     */
    public <A> void fetchAndAdd(RemoteRegion remote, long delta, A attachment, CompletionHandler<Long, ? super A> handler,
                                Completion when) {
        PostForms.handler(live, Operation.FETCH_AND_ADD, null, remote, 0, delta, 0, 0, 0, attachment, handler, when);
    }

    /**
     * {@link #fetchAndAdd(RemoteRegion, long)}, waiting in the caller; returns the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param delta what to add (64-bit, wrapping)
     * @return the prior value of the word
     */
    public long fetchAndAddSync(RemoteRegion remote, long delta) {
        return PostForms.sync(live, Operation.FETCH_AND_ADD, null, remote, 0, delta, 0, 0, 0);
    }

    /**
     * Masked compare-and-swap on the 8 bytes at the start of {@code remote}: if
     * {@code (prior & compareMask) == (compare & compareMask)}, the bits of {@code swapMask} become
     * those of {@code swap} and the others stay. Completes with the prior value.
     *
     * <p>Where the device has no masked atomics (no upstream verbs device exposes them; see
     * {@link dev.jrdma.device.DeviceCapabilities#maskedAtomics()}) this is emulated, as are
     * {@link #maskedFetchAndAdd} and {@link #atomicWrite}: each attempt is one RDMA
     * compare-and-swap of the whole word, expecting the value the previous attempt saw (the
     * first expects 0). The operation takes effect at the attempt whose CAS succeeds, or, when
     * the value seen needs no change, at the CAS that saw it. So it is atomic and linearisable
     * towards every other atomic on the word (native or emulated, from any peer), but not
     * towards plain RDMA writes or CPU stores to it. It is lock-free, not wait-free: under
     * contention it retries, and after the connection's timeout it fails with
     * {@link RdmaTimeoutException}. Each attempt is one round trip.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param compare the value to compare with, in the bits of {@code compareMask}
     * @param compareMask the bits that are compared
     * @param swap the new value, in the bits of {@code swapMask}
     * @param swapMask the bits that are swapped
     * @return a future of the prior value of the word
     */
    public CompletableFuture<Long> maskedCompareAndSwap(RemoteRegion remote, long compare, long compareMask, long swap,
                                                        long swapMask) {
        return PostForms.future(live, Operation.MASKED_COMPARE_AND_SWAP, null, remote, 0, compare, compareMask, swap, swapMask);
    }

    /**
     * Allocation-free form of {@link #maskedCompareAndSwap(RemoteRegion, long, long, long, long)}:
     * {@code handler} gets the prior value, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param compare the value to compare with, in the bits of {@code compareMask}
     * @param compareMask the bits that are compared
     * @param swap the new value, in the bits of {@code swapMask}
     * @param swapMask the bits that are swapped
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void maskedCompareAndSwap(RemoteRegion remote, long compare, long compareMask, long swap, long swapMask,
                                         A attachment, CompletionHandler<Long, ? super A> handler) {
        PostForms.handler(live, Operation.MASKED_COMPARE_AND_SWAP, null, remote, 0, compare, compareMask, swap, swapMask, attachment, handler);
    }

    /**
     * With the prior value unboxed: nothing allocated.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param compare the value to compare with, in the bits of {@code compareMask}
     * @param compareMask the bits that are compared
     * @param swap the new value, in the bits of {@code swapMask}
     * @param swapMask the bits that are swapped
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void maskedCompareAndSwap(RemoteRegion remote, long compare, long compareMask, long swap, long swapMask,
                                         A attachment, LongCompletionHandler<? super A> handler) {
        PostForms.primitive(live, Operation.MASKED_COMPARE_AND_SWAP, remote, compare, compareMask, swap, swapMask, attachment, handler);
    }

    /**
     * {@link #maskedCompareAndSwap(RemoteRegion, long, long, long, long)}, waiting in the caller;
     * returns the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param compare the value to compare with, in the bits of {@code compareMask}
     * @param compareMask the bits that are compared
     * @param swap the new value, in the bits of {@code swapMask}
     * @param swapMask the bits that are swapped
     * @return the prior value of the word
     */
    public long maskedCompareAndSwapSync(RemoteRegion remote, long compare, long compareMask, long swap, long swapMask) {
        return PostForms.sync(live, Operation.MASKED_COMPARE_AND_SWAP, null, remote, 0, compare, compareMask, swap, swapMask);
    }

    /**
     * Masked fetch-and-add on the 8 bytes at the start of {@code remote}: the word is a set of
     * fields, each ending at a set bit of {@code fieldBoundaryMask} (its most significant bit),
     * and {@code add} is added field by field, a carry never crossing into the next field.
     * Completes with the prior value. Emulated like {@link #maskedCompareAndSwap}.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param add what to add, field by field
     * @param fieldBoundaryMask the most significant bit of each field
     * @return a future of the prior value of the word
     */
    public CompletableFuture<Long> maskedFetchAndAdd(RemoteRegion remote, long add, long fieldBoundaryMask) {
        return PostForms.future(live, Operation.MASKED_FETCH_AND_ADD, null, remote, 0, add, fieldBoundaryMask, 0, 0);
    }

    /**
     * Allocation-free form of {@link #maskedFetchAndAdd(RemoteRegion, long, long)}: {@code handler}
     * gets the prior value, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param add what to add, field by field
     * @param fieldBoundaryMask the most significant bit of each field
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void maskedFetchAndAdd(RemoteRegion remote, long add, long fieldBoundaryMask, A attachment,
                                      CompletionHandler<Long, ? super A> handler) {
        PostForms.handler(live, Operation.MASKED_FETCH_AND_ADD, null, remote, 0, add, fieldBoundaryMask, 0, 0, attachment, handler);
    }

    /**
     * With the prior value unboxed: nothing allocated.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param add what to add, field by field
     * @param fieldBoundaryMask the most significant bit of each field
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void maskedFetchAndAdd(RemoteRegion remote, long add, long fieldBoundaryMask, A attachment,
                                      LongCompletionHandler<? super A> handler) {
        PostForms.primitive(live, Operation.MASKED_FETCH_AND_ADD, remote, add, fieldBoundaryMask, 0, 0, attachment, handler);
    }

    /**
     * {@link #maskedFetchAndAdd(RemoteRegion, long, long)}, waiting in the caller; returns the prior value.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param add what to add, field by field
     * @param fieldBoundaryMask the most significant bit of each field
     * @return the prior value of the word
     */
    public long maskedFetchAndAddSync(RemoteRegion remote, long add, long fieldBoundaryMask) {
        return PostForms.sync(live, Operation.MASKED_FETCH_AND_ADD, null, remote, 0, add, fieldBoundaryMask, 0, 0);
    }

    /**
     * Writes {@code value} to the 8-byte aligned word at the start of {@code remote}, atomically
     * with respect to the other atomics on it: no reader through an atomic sees half of it. The
     * verbs devices here have no native atomic write ({@code IBV_WR_ATOMIC_WRITE} needs rdma-core
     * 45 and a device that has it), so it is a compare-and-swap loop (see {@link MaskedAtomics}).
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param value the 64-bit value to write
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> atomicWrite(RemoteRegion remote, long value) {
        return PostForms.future(live, Operation.ATOMIC_WRITE, null, remote, 0, value, 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #atomicWrite(RemoteRegion, long)}: {@code handler} gets null on
     * success, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param value the 64-bit value to write
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void atomicWrite(RemoteRegion remote, long value, A attachment, CompletionHandler<Void, ? super A> handler) {
        PostForms.handler(live, Operation.ATOMIC_WRITE, null, remote, 0, value, 0, 0, 0, attachment, handler);
    }

    /**
     * {@link #atomicWrite(RemoteRegion, long)}, waiting in the caller.
     *
     * @param remote the peer's 8-byte aligned word: the first 8 bytes of this region
     * @param value the 64-bit value to write
     */
    public void atomicWriteSync(RemoteRegion remote, long value) {
        PostForms.sync(live, Operation.ATOMIC_WRITE, null, remote, 0, value, 0, 0, 0);
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
     *
     * @param remote the peer's region the writes went to
     * @param type {@link FlushType#VISIBILITY}, or {@link FlushType#PERSISTENT} towards persistent memory
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> flush(RemoteRegion remote, FlushType type) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        try {
            checkFlush(remote, type);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
            return f;
        }
        return PostForms.future(live, Operation.FLUSH, null, remote, 0, persistence(type), 0, 0, 0);
    }

    /**
     * Allocation-free form of {@link #flush(RemoteRegion, FlushType)}: {@code handler} gets null once
     * the writes are there, with {@code attachment}.
     *
     * @param <A> the type of the attachment
     * @param remote the peer's region the writes went to
     * @param type {@link FlushType#VISIBILITY}, or {@link FlushType#PERSISTENT} towards persistent memory
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void flush(RemoteRegion remote, FlushType type, A attachment, CompletionHandler<Void, ? super A> handler) {
        try {
            checkFlush(remote, type);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
            return;
        }
        PostForms.handler(live, Operation.FLUSH, null, remote, 0, persistence(type), 0, 0, 0, attachment, handler);
    }

    /**
     * {@link #flush(RemoteRegion, FlushType)}, waiting in the caller: the writes before it are there
     * when it returns.
     *
     * @param remote the peer's region the writes went to
     * @param type {@link FlushType#VISIBILITY}, or {@link FlushType#PERSISTENT} towards persistent memory
     */
    public void flushSync(RemoteRegion remote, FlushType type) {
        checkFlush(remote, type);
        PostForms.sync(live, Operation.FLUSH, null, remote, 0, persistence(type), 0, 0, 0);
    }

    private void checkFlush(RemoteRegion remote, FlushType type) {
        Objects.requireNonNull(remote, "remote");
        Objects.requireNonNull(type, "type");
        OperationChecks.checkFlush(remote, type, rdma.deviceName());
    }

    private static long persistence(FlushType type) {
        return type == FlushType.PERSISTENT ? 1 : 0;
    }

    // ---------------------------------------------------------------- batches

    /**
     * A chain of operations posted with one doorbell; see {@link Batch}.
     *
     * @return this batch
     */
    public Batch batch() {
        return new Batch(this);
    }

    void submit(Batch b, BatchCompletion bc) {
        live.sends.submit(b, bc);
    }

    // ---------------------------------------------------------------- for the rest of the library

    Rdma rdma() {
        return rdma;
    }

    /** The object the application holds (this, or the first life of a reconnecting connection). */
    Connection handle() {
        return handle;
    }

    Consumer<Connection> disconnectCallback() {
        return handle.onDisconnect;
    }

    /** On the handle: {@code next}, established, takes over (the application's receive callback first). */
    void adopt(Connection next) {
        BiConsumer<Connection, Message> cb = onReceive;
        if (cb != null) {
            next.receives.onReceive(cb);
        }
        live = next;
    }

    /** On the handle: the current life. */
    Connection live() {
        return live;
    }

    void repost(int buffer) {
        receives.repost(buffer);
    }

    void freeMemory() {
        receives.freeMemory();
    }

    /** The queue pair of this established connection, for a registration scoped to it; {@code op} names the call. */
    QueuePair establishedQueuePair(String op) {
        ConnectionLife life = live.life;
        ConnectionState s = life.state();   // read first: it is written after qp
        QueuePair q = life.queuePair();
        if (s != ConnectionState.ESTABLISHED || q == null) {
            throw new ConnectionClosedException(op + ": the connection to " + remoteAddress + " is " + s);
        }
        return q;
    }

    /**
     * For the call {@code op} (named in messages), a registration of {@code memory} (within
     * {@code base}) for this connection's peer alone: a
     * type 2 memory window bound on this connection's queue pair ({@link SendQueue#bindWindow}).
     * Closing it deallocates the window, which revokes the key at once.
     */
    MemoryRegistration bindWindow(String op, Device device, MemoryRegistration base, MemorySegment memory, int access) {
        establishedQueuePair(op);
        if (base.handle() == 0) {   // a bind over it would fail on the device and take the connection down
            throw new UnsupportedCapabilityException("a registration for one connection", device.name(),
                    "this region's registration cannot have a memory window bound over it (on-demand paging, or "
                            + "physical addresses); toRemote() exposes it to every peer holding the descriptor");
        }
        MemoryWindow window = device.allocateWindow();
        try {
            CompletableFuture<Void> bound = new CompletableFuture<>();
            int rkey = sends.bindWindow(window, base, memory.address(), memory.byteSize(), access & AccessFlags.REMOTE_MASK, bound);
            return new WindowRegistration(window, memory, base.lkey(), rkey, access, bound);
        } catch (RuntimeException e) {
            window.close();
            throw e;
        }
    }

    /**
     * Waits for a window's bind ({@link #bindWindow}): its key works once the bind ran, so that a
     * descriptor handed out by any path is good. Not on an IO thread (a callback), where the bind
     * cannot complete while it waits: there RC's order is the guarantee (a descriptor sent on
     * this connection after it reaches the peer after the bind).
     */
    void awaitBind(String op, CompletableFuture<Void> bound) {
        try {
            io.await(bound, config.timeout().toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException(op + ": interrupted while the memory window was bound");
        } catch (java.util.concurrent.TimeoutException e) {
            throw new RdmaTimeoutException(op + ": the memory window's bind on the connection to " + remoteAddress
                    + " did not complete within " + config.timeout());
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r
                    : new RdmaException(op + ": the memory window's bind failed: " + e.getCause(), e.getCause());
        }
    }

    /** Runs {@code r} once this connection is released (at once, here, if it is already). */
    void addReleaseHook(Runnable r) {
        live.life.addReleaseHook(r);
    }

    /** {@code r} is not to run any more (what it would end ended otherwise). */
    void removeReleaseHook(Runnable r) {
        live.life.removeReleaseHook(r);
    }

    /** Release hooks waiting: for tests. */
    int releaseHookCount() {
        return live.life.releaseHookCount();
    }

    // ---------------------------------------------------------------- closing

    /**
     * Disconnects: every outstanding operation and receive completes (with
     * {@link ConnectionClosedException}), the peer sees the disconnect, and everything is freed.
     * Idempotent. Waits (unless called on the IO thread) for the teardown, which never waits for
     * the peer: at most 5 s plus a second; if the IO thread has not
     * finished by then (it is overloaded), close returns anyway, says so in the log, and the
     * teardown ends in the background. Close never throws because a peer was slow.
     */
    @Override
    public void close() {
        Reconnector r = reconnector;
        if (r != null) {
            r.stop();
        }
        live.life.close();
    }

    /**
     * Starts {@link #close()} without waiting: the future completes when the connection is
     * released (everything outstanding completed, everything freed). For closing many at once.
     *
     * @return a future that completes when the operation did, or exceptionally with what failed
     */
    public CompletableFuture<Void> closeAsync() {
        Reconnector r = reconnector;
        if (r != null) {
            r.stop();
        }
        return live.life.closeAsync();
    }

    @Override
    public String toString() {
        return "Connection[" + remoteAddress + ", " + state() + "]";
    }
}
