package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.os.Errno;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;

import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A connection's life: CONNECTING (the connection manager's events, from the connect or accept
 * to established, rejected or failed), ESTABLISHED, ERROR (the first failure, which it keeps),
 * and CLOSED (the teardown: the peer is told, the QP put in error, what is outstanding flushed,
 * then everything released). The connection manager's events reach it from {@link Rdma}'s
 * handler; its {@link #source} is what the IO thread polls.
 *
 * <p>Threads: state changes run on the connection's IO thread (or IO thread 0 for the
 * connection manager's events, before the connection is polled); {@link #state()} and
 * {@link #failure()} are read from any thread.
 */
final class ConnectionLife {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /** How long a teardown waits for the flush of what is outstanding before it frees all the same. */
    static final long TEARDOWN_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final Connection connection;
    private final IoThread io;
    private final InetSocketAddress remoteAddress;
    private final LongSupplier clock;
    final CompletableFuture<Connection> connected = new CompletableFuture<>();
    private final CompletableFuture<Void> released = new CompletableFuture<>();
    private SendQueue sends;
    private ReceiveQueue receives;
    private CompletionDispatch dispatch;

    private CmEndpoint endpoint;
    /** This end's address, read when the connection came up (the endpoint is gone after the close); null before. */
    private volatile InetSocketAddress localAddress;
    private volatile QueuePair qp;
    /** Its completion queue, own or shared; set in {@link #prepare}, before the IO thread is handed the connection. */
    private ConnectionCompletions cq;
    private volatile Handshake peer = Handshake.UNKNOWN;
    /** For an accepted connection: the handshake of the request, applied once established. */
    private Handshake pendingPeer = Handshake.UNKNOWN;
    private volatile ConnectionState state = ConnectionState.CONNECTING;
    private volatile RdmaException failure;
    /** {@link #failure} is only a flushed request's (WR_FLUSH_ERR): the QP went to error for a reason not known yet.
     * A CQ does not order a QP's send and receive queues, so the receives' flushes can come before the failed
     * request that caused them; the first real failure then takes the flush's place. Completing thread only. */
    private boolean failureIsFlush;
    /** What runs once when this connection is released (scoped exposures ending); any thread adds and removes. */
    private final Set<Runnable> releaseHooks = ConcurrentHashMap.newKeySet();

    private boolean tearingDown;
    /** The IO thread is inside this connection's poll (on that thread only). */
    private boolean polling;
    private long teardownDeadline;

    ConnectionLife(Connection connection, IoThread io, InetSocketAddress remoteAddress, LongSupplier clock) {
        this.connection = connection;
        this.io = io;
        this.remoteAddress = remoteAddress;
        this.clock = clock;
    }

    void parts(SendQueue sends, ReceiveQueue receives, CompletionDispatch dispatch) {
        this.sends = sends;
        this.receives = receives;
        this.dispatch = dispatch;
    }

    /** What the IO thread polls for this connection; it also finishes a teardown. */
    final IoThread.Source source = new IoThread.Source() {
        @Override
        public int poll() {
            polling = true;
            int n;
            long before = dispatch.count;
            try {
                n = cq.poll(dispatch);
            } finally {
                polling = false;
            }
            // n counts the peer's frames served too (a peer that keeps sending during our
            // teardown must not hold it back): the release waits for a pass without completions.
            if (tearingDown && ((dispatch.count == before && drained()) || System.nanoTime() > teardownDeadline)) {
                release();
            }
            return n;
        }

        @Override
        public void arm() {
            cq.arm();
        }

        /** At rest while its queue is (nothing to do until its socket is ready or something is posted), not in a teardown. */
        @Override
        public boolean rest() {
            return !tearingDown && cq.rest(wakeSource);
        }

        @Override
        public boolean mayRest() {
            return true;   // a software provider's queue rests while idle; verbs' never does (its rest() says false)
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

    /** What the provider runs to take the resting {@link #source} back into its IO thread's passes. */
    private final Runnable wakeSource = new Runnable() {
        @Override
        public void run() {
            io.wake(source);
        }
    };

    /** What the connection manager creates the queue pair for: us, and the lock our posts are under. */
    private final QueuePairOwner owner = new QueuePairOwner() {
        @Override
        public void onQueuePair(QueuePair q) {
            qp = q;
            connection.rdma().live().queuePairCreated(q.qpNum(), connection);
            cq.queuePairMade(q.qpNum(), dispatch);   // before the receives below are posted
            sends.attach(q);
            receives.attach(q);
        }

        @Override
        public Object postMonitor() {
            return sends.postLock;
        }

        @Override
        public Srq srq() {
            return receives.sharedQueue();
        }
    };

    // ---------------------------------------------------------------- connecting (IO thread 0)

    /** On the connection's IO thread: from now on it polls the CQ. Not once the connection is released: a connect
     * that failed on IO thread 0 before this task ran on the connection's own thread has destroyed the CQ, and a
     * destroyed CQ polled or armed is a use after free in the provider (a SIGSEGV in ibv_req_notify_cq, seen with
     * several Netty event loops). */
    private void addSource() {
        if (!released.isDone() && !cq.shared()) {   // a shared queue's completions come through its own source
            io.add(source);
        }
    }

    /** Makes the CQ (or takes room in one its IO thread's connections share) and the registered buffers; before the QP exists. */
    private void prepare(Device device, CompletionChannel channel) {
        ConnectionConfig config = connection.config();
        cq = ConnectionCompletions.make(device, channel, connection.rdma().io().sharedOf(io),
                config.sendQueueDepth() + 1 + config.receiveQueueDepth());
        receives.prepare(device);
        sends.prepare(device);
    }

    private QueuePairSpec spec(Device device) {
        ConnectionConfig config = connection.config();
        int rd = config.rdAtomicFor(device.capabilities());
        // One send-queue entry more than the slots: the teardown's marker (SendQueue.postMarker).
        // With a shared receive queue the QP has no receive queue of its own.
        return new QueuePairSpec(config.sendQueueDepth() + 1, config.sharedReceiveQueue() != null ? 0 : config.receiveQueueDepth(),
                1, 1, config.maxInlineData(),
                rd, rd, config.retryCount(), config.rnrRetry(), config.ackTimeout(), config.minRnrTimer(),
                config.trafficClass(), config.serviceLevel(), config.flowLabel());
    }

    /** Starts connecting through {@code cm}; a failure fails the connect. */
    void connect(Device device, CompletionChannel channel, ConnectionManager cm) {
        if (released.isDone()) {
            return;   // closed (and released) before this task ran: make nothing
        }
        try {
            prepare(device, channel);
            io.execute(this::addSource);
            ConnectionConfig config = connection.config();
            endpoint = cm.connect(remoteAddress, cq.queue(), spec(device), Handshake.of(config).encode(),
                    (int) config.timeout().toMillis(), owner);
            endpoint.attach(connection);
        } catch (RdmaException e) {
            failConnect(e);
        } catch (RuntimeException e) {
            failConnect(new RdmaException("connecting to " + remoteAddress + " failed: " + e, e));
        }
    }

    /** Accepts {@code request}, whose handshake was {@code peer}; a failure rejects it. */
    void accept(CmEndpoint request, Handshake peer, Device device, CompletionChannel channel) {
        endpoint = request;
        request.attach(connection);
        try {
            prepare(device, channel);
            request.accept(cq.queue(), spec(device), Handshake.of(connection.config()).encode(), owner);
            pendingPeer = peer;
            io.execute(this::addSource);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "accepting a connection from " + remoteAddress + " failed", e);
            try {
                request.reject(Handshake.rejection("the server could not accept: " + e.getMessage()));
            } catch (RuntimeException ignored) {
                // the request may be gone already
            }
            failConnect(e instanceof RdmaException r ? r : new RdmaException(e.toString(), e));
        }
    }

    /** The connection manager says the connection is up; {@code privateData} is the accepter's handshake. */
    void onEstablished(byte[] privateData) {
        RdmaServer server = connection.server;
        peer = server != null ? pendingPeer : Handshake.decode(privateData);
        CmEndpoint ep = endpoint;
        if (ep != null) {
            try {
                localAddress = ep.localAddress();
            } catch (RuntimeException ignored) {
                // The address stays unknown (null); nothing else depends on it.
            }
        }
        state = ConnectionState.ESTABLISHED;
        Rdma rdma = connection.rdma();
        QueuePair q = qp;
        JrdmaEvents.connectionEstablished(remoteAddress, rdma.providerName(), rdma.deviceName(), q == null ? 0 : q.qpNum(),
                server != null);
        if (server != null) {
            server.add(connection);
        }
        connected.complete(connection);
        if (server != null) {
            io.execute(() -> {
                try {
                    server.onAccept.accept(connection);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "the accept callback threw", e);
                }
            });
        }
    }

    /** {@return this end's address, once established; null before, or when the provider could not tell} */
    InetSocketAddress localAddress() {
        return localAddress;
    }

    void onRejected(int status, byte[] privateData) {
        String reason = Handshake.rejectionReason(privateData);
        failConnect(new ConnectionRejectedException("connection to " + remoteAddress
                + " was refused: " + (reason != null ? reason : "rejected by the peer (status " + status
                + "; nothing listens there, or the peer rejected it)")));
    }

    /**
     * The connection manager gave up; {@code status} an errno (rdma_cm's negative). Its own
     * deadline (ETIMEDOUT) is the connect's time-out, which Rdma's timer also watches: whichever
     * fires first, the connect fails with the same RdmaTimeoutException.
     */
    void onConnectError(String what, int status) {
        if (connection.server != null) {
            // An accepted connection that failed before it was established: no callback of the
            // application has seen it, so the log is where an operator learns of it (a client too
            // slow for Rdma.Builder.handshakeTimeout sees its new connection end at once).
            // A peer can cause this as often as it connects (a flood of requests that never finish): limited.
            Log.limited("connection.droppedBeforeEstablished", System.Logger.Level.WARNING,
                    "dropped a connection from " + remoteAddress + " before it was established: " + what);
            failConnect(new RdmaException("accepting " + remoteAddress + " failed: " + what));
            return;
        }
        if (Math.abs(status) == Errno.ETIMEDOUT) {
            failConnect(new RdmaTimeoutException("connecting to " + remoteAddress + " did not complete within "
                    + connection.config().timeout() + " (" + what + ")"));
            return;
        }
        failConnect(new RdmaException("connecting to " + remoteAddress + " failed: " + what));
    }

    /** Connecting failed: free what was made, fail the connect future. */
    void failConnect(RdmaException e) {
        if (state == ConnectionState.CONNECTING) {
            failure = e;
            state = ConnectionState.CLOSED;
            JrdmaEvents.connectionFailed(remoteAddress, connection.rdma().providerName(), true, e);
            connected.completeExceptionally(e);
            // The connection manager's events and the connect timer run on IO thread 0; the CQ,
            // the source and the completion channel belong to the connection's IO thread, which
            // may be another one, polling them at this moment: the release runs there, after the
            // source's addSource task that connect() queued on it.
            if (io.inThisThread()) {
                release();
            } else {
                try {
                    io.execute(this::release);
                } catch (IllegalStateException stopped) {
                    release();   // its thread has stopped (the Rdma is closing): nothing polls the CQ any more
                }
            }
        }
    }

    // ---------------------------------------------------------------- what it is now

    ConnectionState state() {
        return state;
    }

    RdmaException failure() {
        return failure;
    }

    boolean isReleased() {
        return released.isDone();
    }

    Handshake peer() {
        return peer;
    }

    QueuePair queuePair() {
        return qp;
    }

    InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    Connection connection() {
        return connection;
    }

    long nanoTime() {
        return clock.getAsLong();
    }

    void checkUsable(String op) {
        if (state != ConnectionState.ESTABLISHED) {
            throw notUsable(op);
        }
    }

    RdmaException notUsable(String op) {
        RdmaException why = failure;
        return new ConnectionClosedException(op + ": the connection to " + remoteAddress + " is " + state
                + (why == null ? "" : " (" + why.getMessage() + ")"), why);
    }

    static ConnectionClosedException closedBecause(RdmaException why) {
        return why instanceof ConnectionClosedException c ? c : new ConnectionClosedException(why.getMessage(), why);
    }

    // ---------------------------------------------------------------- failing

    /** The first failure moves the connection to ERROR; the QP is in error already (the device did it). */
    void markError(RdmaException e) {
        markError(e, false);
    }

    /**
     * A request completed flushed while no failure was known: as {@link #markError}, but the
     * flush stands as the connection's failure only until the failure behind it completes.
     */
    void markFlushed(RdmaException e) {
        markError(e, true);
    }

    private void markError(RdmaException e, boolean flush) {
        if (failure == null) {
            failure = e;
            failureIsFlush = flush;
            boolean wasUp = state == ConnectionState.ESTABLISHED;
            if (wasUp) {
                state = ConnectionState.ERROR;
                JrdmaEvents.connectionFailed(remoteAddress, connection.rdma().providerName(), false, e);
            }
            LOG.log(System.Logger.Level.DEBUG, "connection to {0} in error: {1}", remoteAddress, e.getMessage());
            receives.failReceivers(e);
            Reconnector r = connection.handle().reconnector;
            if (wasUp && r != null) {
                r.lifeFailed(connection);   // it tears this life down, then connects again
            }
        } else if (failureIsFlush && !flush) {
            failure = e;
            failureIsFlush = false;
        }
    }

    /**
     * The device said port {@code port} went down; {@code stillDown} tells, later, whether it has
     * stayed down since (no PORT_ACTIVE). On a dead link a device ends every outstanding request
     * with a retry-exceeded error once the retry budget (ack timeout × (retry count + 1)) is spent;
     * rxe on Linux 6.1 can instead stall (seen in CI: every request outstanding at the outage
     * neither retried nor failed, the QP still in RTS a minute later). So if this connection's QP
     * is on that port and had operations outstanding, it checks again after twice the budget and
     * {@link #PORT_DOWN_SLACK_NANOS} (twice: a NIC's real retransmission may take longer than the
     * nominal budget, and the device's own error is the better one): if the port is still down and,
     * with the completions the device has made taken first, none of those operations has ended,
     * the QP is put in error here and they end, flushed, with that named as the cause. A flap, a
     * device that fails the requests itself or makes progress, a connection idle at the outage (a
     * QP without requests never fails on a dead link, and works again when it comes back) and a QP
     * without an ack timeout (it never gives up) leave this nothing to do. On the IO thread.
     */
    void portWentDown(String device, int port, java.util.function.BooleanSupplier stillDown) {
        try {
            QueuePair q = qp;
            SendQueue s = sends;
            if (state != ConnectionState.ESTABLISHED || q == null || s == null || released.isDone() || tearingDown) {
                return;
            }
            if (s.slots.outstanding() == 0) {
                return;   // idle at the outage
            }
            long endedBefore = s.slots.ended();
            int exponent = q.queryAckTimeout(), retries = q.queryRetryCount(), qpPort = q.queryPort();
            if (exponent <= 0 || retries < 0 || (qpPort > 0 && qpPort != port)) {
                return;
            }
            long budget = (4096L << Math.min(exponent, 31)) * (retries + 1L);
            portDownChecksScheduled++;
            CompletableFuture.delayedExecutor(2 * budget + PORT_DOWN_SLACK_NANOS, TimeUnit.NANOSECONDS, io::execute)
                    .execute(() -> checkPortDown(device, port, stillDown, q, s, endedBefore, budget, exponent, retries));
        } catch (RuntimeException e) {   // a device going away fails the queries: its own events follow
            LOG.log(System.Logger.Level.DEBUG, "checking the connection to {0} after port {1} went down: {2}", remoteAddress,
                    port, e.toString());
        }
    }

    private void checkPortDown(String device, int port, java.util.function.BooleanSupplier stillDown, QueuePair q,
                               SendQueue s, long endedBefore, long budget, int exponent, int retries) {
        portDownChecks++;
        if (state != ConnectionState.ESTABLISHED || qp != q || released.isDone() || tearingDown || !stillDown.getAsBoolean()) {
            return;
        }
        drainCompletions();   // what the device did meanwhile counts: this task may run before the pass polls
        if (state != ConnectionState.ESTABLISHED || s.slots.ended() != endedBefore || !s.slots.anyPosted()) {
            return;
        }
        String ms = String.format(java.util.Locale.ROOT, "%.1f ms", budget / 1e6);
        LOG.log(System.Logger.Level.WARNING, "{0}: port {1} has been down for twice the retry budget ({2}) and the device "
                + "has not ended the operations outstanding on the connection to {3}: putting its QP in error", device, port,
                ms, remoteAddress);
        deviceFailed("port " + port + " of " + device + " went down and stayed down past the retry budget (" + ms
                + ": ack timeout " + exponent + ", " + retries + " retries; waited twice that) while the device neither "
                + "retried nor failed the operations outstanding");
    }

    /** Past twice the retry budget, how long a stalled device gets before {@link #portWentDown} acts. */
    static final long PORT_DOWN_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** Checks {@link #portWentDown} has scheduled, and made (acting or not), for tests; on the IO thread. */
    volatile int portDownChecksScheduled, portDownChecks;

    /** Takes what the completion queue holds now, unless inside a poll or past it; on the IO thread. */
    private void drainCompletions() {
        if (cq != null && !polling && !tearingDown && !released.isDone()) {
            cq.drain(dispatch);
        }
    }

    /**
     * The device reported a fatal event for this QP: the connection is in ERROR, and the QP is
     * put in error, so every outstanding operation completes (flushed) with that cause.
     */
    void deviceFailed(String why) {
        markError(new ConnectionClosedException("the connection to " + remoteAddress + " failed: " + why));
        if (qp != null && !released.isDone()) {
            moveToError();
        }
    }

    private void moveToError() {
        try {
            qp.moveToError();
        } catch (RdmaException e) {
            LOG.log(System.Logger.Level.DEBUG, "moving the QP to error: {0}", e.getMessage());
        }
    }

    // ---------------------------------------------------------------- going down

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
        drainCompletions();
        startTeardown(why);
    }

    /** Tells the peer, puts the QP in error and waits (polling) for the flush; the release follows. */
    void startTeardown(ConnectionClosedException why) {
        if (tearingDown || released.isDone()) {
            return;
        }
        tearingDown = true;
        if (cq != null) {
            cq.pollDuringTeardown(io, source);   // polled again until released (on this thread: from now on)
        }
        if (failure == null) {
            failure = why;
        }
        receives.failReceivers(why);
        state = ConnectionState.CLOSED;
        if (endpoint != null) {
            endpoint.disconnect();
        }
        if (qp != null) {
            moveToError();   // everything outstanding completes, flushed
            sends.postMarker();
        }
        teardownDeadline = System.nanoTime() + TEARDOWN_NANOS;
        if (cq == null) {
            release();
        }
    }

    /** Nothing outstanding any more: every send-queue operation and every receive completed. */
    private boolean drained() {
        synchronized (sends.postLock) {
            return sends.drained() && receives.drained();
        }
    }

    /** Frees everything; fails what is still outstanding (it should be nothing after the flush). */
    private void release() {
        if (released.isDone()) {
            return;
        }
        state = ConnectionState.CLOSED;
        io.remove(source);
        dispatch.failOutstanding(closedBecause(failure != null ? failure : new ConnectionClosedException("connection closed")));
        Rdma rdma = connection.rdma();
        if (endpoint != null) {
            endpoint.close();
        }
        rdma.io().channelOf(io).drainEvents();
        if (cq != null) {
            cq.release(qp == null ? -1 : qp.qpNum());   // the QP was destroyed with the endpoint above
        }
        sends.close();
        if (!receives.release()) {
            rdma.live().memoryHeld(connection);   // freed when the last lent message closes, or when the Rdma closes
        }
        rdma.live().forget(connection);
        if (connection.server != null) {
            connection.server.forget(connection);
        }
        released.complete(null);
        runReleaseHooks();
        boolean wasUp = connected.isDone() && !connected.isCompletedExceptionally();
        if (wasUp) {   // a connect that failed had its ConnectionFailed event
            ConnectionCounters counted = connection.counters();
            JrdmaEvents.connectionClosed(remoteAddress, rdma.providerName(), failure == null ? null : failure.getMessage(),
                    counted.completedTotal(), counted.failedTotal());
        }
        Consumer<Connection> cb = connection.disconnectCallback();
        if (cb != null && wasUp) {
            try {
                cb.accept(connection.handle());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "onDisconnect callback threw", e);
            }
        }
        Reconnector r = connection.handle().reconnector;
        if (r != null && wasUp) {
            r.lifeReleased(connection, failure);
        }
    }

    /** Runs {@code r} once this connection is released (at once, here, if it is already). */
    void addReleaseHook(Runnable r) {
        releaseHooks.add(r);
        if (released.isDone() && releaseHooks.remove(r)) {   // whoever removes it runs it
            r.run();
        }
    }

    void removeReleaseHook(Runnable r) {
        releaseHooks.remove(r);
    }

    int releaseHookCount() {
        return releaseHooks.size();
    }

    private void runReleaseHooks() {
        for (Runnable hook : releaseHooks) {
            if (releaseHooks.remove(hook)) {
                try {
                    hook.run();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "ending an exposure to the connection to " + remoteAddress + " failed", e);
                }
            }
        }
    }

    /** Starts closing (on the IO thread); the future completes when the connection is released. */
    CompletableFuture<Void> closeAsync() {
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

    /** {@link #closeAsync()}, then waits for the release (not on the IO thread) up to the teardown's bound + 1 s. */
    void close() {
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
}
