package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;

import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * A reliable connection over one TCP socket, with RC's semantics: requests are applied by the
 * peer in posting order, each completes exactly once, and the first remote error ends the
 * connection (the QP goes to error and everything still outstanding completes flushed).
 *
 * <p>Two sides share the socket. As <b>requester</b>, posting threads write request frames
 * ({@link TcpFrameDescriptor}) and record each in the send ring; responses retire the ring in
 * order. As <b>responder</b>, the progress thread (the IO thread polling the CQ) reads the
 * peer's requests and applies them to this device's registrations after checking key, bounds
 * and access, much as SoftiWARP does in the kernel.
 *
 * <p>A SEND that finds no receive posted is not dropped: it is parked, with every request of
 * the peer's after it, and replayed in order when a receive is posted, as an RC responder
 * keeps answering RNR; responses to this side's own requests go on being read meanwhile, so
 * they do not wait behind it (on verbs the two directions are independent too). Parking has a
 * budget per connection, {@value ParkedRequests#BUDGET} bytes, payloads and a fixed
 * {@value ParkedRequests#FRAME_COST} bytes a frame counted: a frame that does not fit is not read
 * (nothing is allocated for what it declares) and the stream stops there, until parked frames
 * drain or a receive is posted; TCP flow control then holds the peer. The memory of parked
 * payloads comes from one budget for the whole process ({@link PayloadBudget}), drawn as the
 * bytes arrive; past it the stream stops too. A frame whose payload makes no progress for the
 * stall deadline (5 s by default: the peer sends no more of it, or it waits that long for the
 * process's budget) ends the connection, and frees what it held. While more than
 * {@value AnswerBacklog#LIMIT} bytes of our answers wait for the peer to read them,
 * its READs and atomics are parked (headers only) rather than answered: a peer that stops
 * reading gets no more answers, and one that reads gets them. After the peer's RNR budget,
 * {@code (rnrRetry + 1) x} {@value #RNR_TIMER_MS} ms without a receive for the SEND at the head,
 * it is refused with {@code IBV_WC_RNR_RETRY_EXC_ERR}; the budget starts again for each SEND
 * that finds no receive.
 */
final class TcpQueuePair implements QueuePair {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    static final long RNR_TIMER_MS = 100;

    /** What the connection manager learns from the queue pair. */
    interface Events {
        /** The peer disconnected, or the socket failed; called once, on the progress thread. */
        void peerGone(String why);

        /**
         * The peer named a key it was not granted, or broke the protocol: its connection ends (the
         * caller sees to that); this only tells the accept policy. On the progress thread.
         */
        default void peerOffended(String what) {
        }
    }

    final int fd;
    final int qpNum;
    /**
     * Who this queue pair is among all of the process's, for keys scoped to one connection
     * ({@link TcpMemoryRegistration#reachableFrom}): never 0, never reused (a qpNum wraps at 2^24).
     */
    final long scope = SCOPES.incrementAndGet();
    private static final java.util.concurrent.atomic.AtomicLong SCOPES = new java.util.concurrent.atomic.AtomicLong();
    final TcpRegistrations registrations;
    final TcpCompletionQueue cq;
    final QueuePairSpec granted;
    private final Events events;

    /** Where the QP and its socket are (see {@link QueuePairState}: who moves which, and in which order). */
    final QueuePairState state = new QueuePairState();

    // ---- same host (shm): the peer's regions mapped here (null: not a peer of this host)
    volatile SameHostPeer sameHost;
    /** The rings and the proven channel to a same-host peer (null: no same-host support). */
    private final SameHostLink rings;
    /** The peer's ring this side reads, in ring mode. */
    FrameRing rxRing;
    volatile boolean ringMode;
    private long nextSocketCheck;
    /**
     * Ring mode: how long the socket goes unread after a look found nothing. It carries only
     * doorbells, which matter to a thread that sleeps (and it reads them when it wakes), and
     * the end of the peer; the data is in the rings. Looking every 2 us, as a socket that
     * carries data needs, put a recv syscall in every tenth shm round trip: about half of
     * jrdma's time over the raw ping-pong's.
     */
    static final long RING_SOCKET_CHECK_NANOS = 1_000_000;
    private int socketSkips;

    /** Ring mode's socket reads: the doorbell bytes are drained into this. */
    private final Arena arena = Arena.ofShared();
    private final MemorySegment doorbells = arena.allocate(64, 8);

    // ---- send queue: the requester; what the peer sends: the responder
    final TcpRequester requester;
    private final TcpResponder responder;
    /** The same-host mapping protocol (MAP and UNMAP frames), for a peer of this host or not. */
    private final SameHostMapping mapping;

    // ---- receives, consumed by incoming SENDs / WRITE_WITH_IMMs: this QP's own ring, or a shared queue's
    final ReceiveSource rq;
    /** This QP's own receive ring; null when it takes its receives from a shared queue. */
    private final TcpReceiveQueue ownReceives;

    // ---- transmit side, shared by posters and the progress thread
    /**
     * Guards the send side against the progress thread. It is the lock the QP's owner posts
     * under ({@link dev.jrdma.spi.QueuePairOwner#postMonitor}: the Connection's): a post then
     * takes one lock, the owner's, and this one again only as a recursive (cheap) monitor enter.
     */
    final Object txLock;
    final TcpTransmitter tx;
    private boolean watchingOut;
    /** The traffic class the socket sends with, read once it is connected (the fd may be another's after close). */
    private final int trafficClass;

    TcpQueuePair(int fd, int qpNum, TcpRegistrations registrations, TcpCompletionQueue cq, QueuePairSpec spec,
                 Object postMonitor, Events events, TcpSameHost support, TcpSharedReceiveQueue srq) {
        this.fd = fd;
        this.trafficClass = Sockets.trafficClass(fd);
        this.qpNum = qpNum;
        this.registrations = registrations;
        this.cq = cq;
        this.granted = spec;
        this.txLock = postMonitor != null ? postMonitor : new Object();
        this.events = events;
        tx = new TcpTransmitter(fd);   // first: the roles keep it
        requester = new TcpRequester(this, spec.sendDepth(), spec.retryCount(), spec.ackTimeout());
        responder = new TcpResponder(this, spec);
        mapping = new SameHostMapping(this);
        ownReceives = srq == null ? new TcpReceiveQueue(spec.recvDepth()) : null;
        rq = srq == null ? ownReceives : srq.share(this);
        rings = support == null ? null : support.link();
        cq.attach(this);
    }

    int fd() {
        return fd;
    }

    /**
     * The handshake is done: the socket is this QP's from now on. {@code rings}: both sides
     * mapped the other's ring over the proven channel ({@link SameHostLink}), so the peer shares this host and
     * user: frames go through the rings, and shareable regions are reached directly through
     * {@code support}. Otherwise the channel, if any, is closed and everything keeps the socket.
     * {@code peer}: what the peer's handshake announced (its responder resources bound our READs
     * and atomics in flight).
     */
    void start(TcpSameHost support, boolean useRings, QueuePairSpec peer, long idleTimeoutNanos) {
        this.idleTimeoutNanos = idleTimeoutNanos;
        this.keepAliveNanos = keepAliveInterval(idleTimeoutNanos);
        long now = System.nanoTime();
        heardAt = now;
        keepAlive = new KeepAliveSchedule(keepAliveNanos, now, java.util.concurrent.ThreadLocalRandom.current());
        requester.limitReadsAndAtomics(peer.responderResources());
        if (support != null && useRings && rings != null && rings.ready()) {
            registrations.addDirectUser(this);   // before sameHost: a direct operation needs the quiesce
            sameHost = new SameHostPeer(support, rings.channel());
            rxRing = rings.rxRing();
            ringMode = true;
            RING_CONNECTIONS.incrementAndGet();
            tx.useRing(rings.txRing());
        } else if (rings != null) {
            rings.close();
        }
        state.start();
        if (cq.channel != null) {
            cq.channel.register(fd, this);
            cq.channel.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP, true);
            cq.wake();
        }
    }

    /** Server, at ACCEPT: proves itself at the client's rendezvous and sends its nonce (see {@link SameHostLink#offer}). */
    boolean offerRing(byte[] rendezvous, byte[] nonce, long binding) {
        return rings != null && rings.offer(rendezvous, nonce, binding);
    }

    /** Client, at an ACCEPT that offers rings: takes the channel and sends our ring (see {@link SameHostLink#join}). */
    boolean joinSameHost(byte[] nonce, long binding) {
        return rings != null && rings.join(nonce, binding);
    }

    /** Server, at READY_TO_USE saying rings: the client's ring must be waiting on the channel; ours goes back. */
    boolean acceptPeerRing() {
        return rings != null && rings.acceptPeerRing();
    }

    /**
     * Ring mode without the peer's ring yet (a client: the server sends it after our
     * READY_TO_USE, before any frame): maps it if it came. True when there is one to read.
     */
    boolean awaitPeerRing() {
        int got = rings == null ? -1 : rings.pollPeerRing();
        if (got < 0) {
            failConnection("the server's ring was not handed over as a sealed memfd on the same-host channel ("
                    + (rings == null ? "no same-host link" : rings.whyNoPeerRing()) + ")");
            return false;
        }
        if (got > 0) {
            rxRing = rings.rxRing();
        }
        return rxRing != null;
    }

    /**
     * About to sleep (ring mode): ask the peer to ring the socket when it writes. The peer takes
     * the flag back when it rings; this side never clears it (see TcpCompletionQueue.armed).
     */
    void armRing() {
        if (ringMode && !state.closed() && rxRing != null) {   // none yet: the server's first write rings anyway
            rxRing.arm();
            nextSocketCheck = 0;   // the first pass after the sleep reads the doorbell (or EOF) that ended it
        }
    }

    @Override
    public int qpNum() {
        return qpNum;
    }

    @Override
    public QueuePairSpec granted() {
        return granted;
    }

    // ================================================================= requester: posting (TcpRequester)

    @Override
    public int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                        int rkey, long compareAdd, long swap, int imm) {
        int rc = requester.postSend(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
        cq.wakeIfResting();   // its answer's timers, if nothing else, need the queue polled
        return rc;
    }

    @Override
    public int postNow(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey) {
        return requester.postNow(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey);
    }

    @Override
    public int chainCapacity() {
        return requester.chainCapacity();
    }

    @Override
    public void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey,
                      long remoteAddr, int rkey, long compareAdd, long swap, int imm) {
        requester.stage(index, wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
    }

    @Override
    public int postStaged(int count) {
        int rc = requester.postStaged(count);
        cq.wakeIfResting();
        return rc;
    }

    @Override
    public int firstUnposted() {
        return requester.firstUnposted();
    }

    /** After queueing: send, and watch for room when the socket did not take everything. */
    void finishTransmit() {
        if (state.closed()) {
            return;   // the transmitter is freed; a post after close was refused already
        }
        boolean done = tx.flush();
        if (ringMode) {
            return;   // room in the ring comes with a doorbell from the peer (the FrameRing's "producer waits")
        }
        if (cq.channel != null && state.started() && done == watchingOut) {
            watchingOut = !done;
            cq.channel.watch(fd, (responder.deferred() ? 0 : Sockets.EPOLLIN | Sockets.EPOLLRDHUP) | (watchingOut ? Sockets.EPOLLOUT : 0),
                    false);
        }
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        if (state.closed()) {
            return Errno.EINVAL;
        }
        if (length > 0 && registrations.check(lkey, localAddr, length, AccessFlags.LOCAL_WRITE, null) == null) {
            return Errno.EINVAL;
        }
        if (ownReceives == null) {
            return Errno.EINVAL;   // its receives come from a shared queue (ibv_post_recv on such a QP: EINVAL)
        }
        int rc = ownReceives.post(wrId, localAddr, length, lkey);
        if (rc != 0) {
            return rc;
        }
        receivePosted();
        return 0;
    }

    /** A receive was posted, here or to the shared queue this QP waited on: a parked SEND may go now. */
    void receivePosted() {
        if (responder.waitsForReceive()) {
            cq.wake();
        }
    }

    @Override
    public int queryState() {
        return state.verbsState();
    }

    @Override
    public int queryTrafficClass() {
        return trafficClass;
    }

    @Override
    public void moveToError() {
        state.requestError();
        cq.wake();
    }

    /** Whether the responder has stopped reading the peer (a budget is full): the peer's answers wait too. */
    boolean responderDeferred() {
        return responder.deferred();
    }

    /** Sends an ACK owed now, if any (before the IO thread sleeps: nothing may wait for a next pass). */
    void flushAck() {
        responder.flushAck();
    }

    /**
     * On the progress thread, after a progress that did nothing, with its completion queue
     * already marked resting ({@link TcpCompletionQueue#rest}): arms as for a sleep (the ACK
     * owed goes now, the ring is asked to ring) and says whether nothing can happen here until
     * the socket is ready or something is posted. Not while anything has a timer or waits:
     * an operation outstanding (its answer's deadline), bytes waiting to go out, a frame in
     * progress or parked (the RNR and payload-stall deadlines), a receive awaited, an error
     * asked for; nor before the handshake is done.
     */
    boolean mayRest() {
        if (state.closed() || state.failed()) {
            return true;   // nothing more happens here: its owner ends the connection
        }
        if (!state.started() || (state.errorRequested() && !state.inError())) {
            return false;
        }
        responder.flushAck();
        if (ringMode) {
            FrameRing r = rxRing;
            if (r != null && r.arm()) {
                return false;   // bytes came before the arm: read them
            }
            nextSocketCheck = 0;
        }
        synchronized (txLock) {
            if (!tx.idle() || tx.failedErrno() != 0) {
                return false;
            }
        }
        return requester.idle() && (state.peerGone() || responder.atRest());
    }

    // ================================================================= progress (the IO thread)

    /**
     * Tests only: with {@code -Djrdma.faultInjection=true} (a constant, so the check costs nothing
     * otherwise) this runs at the start of every progress pass, to throw where the exception
     * barrier must hold.
     */
    static final boolean FAULT_INJECTION = Boolean.getBoolean("jrdma.faultInjection");
    static volatile Consumer<TcpQueuePair> progressFault;

    /** Reads and applies what the socket has, sends what waits; on the thread polling the CQ. */
    void progress() {
        if (state.closed()) {
            return;
        }
        if (state.errorRequested() && !state.inError()) {
            enterError();
        }
        if (state.failed()) {
            return;   // what threw is not tried again; the owner closes the connection
        }
        if (FAULT_INJECTION && progressFault != null) {
            progressFault.accept(this);
        }
        if (!state.started()) {
            return;
        }
        if (!tx.idle()) {
            synchronized (txLock) {
                finishTransmit();
            }
        }
        if (tx.failedErrno() != 0) {
            gone(tx.failure() != null ? tx.failure()
                    : "sending failed: " + Errno.name(tx.failedErrno()) + " (" + Errno.describe(tx.failedErrno()) + ")");
        }
        requester.completeReady();
        if (!state.peerGone() && ringMode) {
            responder.receive();
            if ((++socketSkips & 7) == 0) {
                long now = System.nanoTime();
                if (now - nextSocketCheck >= 0) {
                    nextSocketCheck = drainSocket() ? 0 : now + RING_SOCKET_CHECK_NANOS;
                }
            }
            if (!state.peerGone()) {
                responder.sendAck();
            }
            return;
        }
        if (!state.peerGone()) {
            if (sameHost != null && responder.idle()) {
                // One-sided traffic bypasses the socket; look at it every 2 us, not every pass
                // (a recv per pass would be most of a busy IO thread's time); and read the clock
                // only every 8th pass.
                if ((++socketSkips & 7) != 0 && nextSocketCheck != 0) {
                    responder.sendAck();
                    return;
                }
                long now = System.nanoTime();
                if (now - nextSocketCheck < 0) {
                    responder.sendAck();
                    return;
                }
                int before = responder.buffered();
                responder.receive();
                if (responder.buffered() == before && responder.idle()) {
                    nextSocketCheck = now + 2_000;
                } else {
                    nextSocketCheck = 0;   // traffic: look again on the next pass
                }
            } else {
                responder.receive();
            }
            responder.sendAck();
        }
    }

    // ---- idle timeout and keep-alive (the IO thread's timer, TcpCompletionChannel.checkIdle)

    /** The longest a connection that has sent nothing waits before its keep-alive. */
    static final long MAX_KEEP_ALIVE_NANOS = 15_000_000_000L;
    private long idleTimeoutNanos, keepAliveNanos;
    private long heardCount, heardAt;
    /** When this side's next keep-alive is due; set at start. */
    private KeepAliveSchedule keepAlive;

    /** A keep-alive when this side has sent nothing for a third of its idle timeout, at most 15 s (none when it has none). */
    static long keepAliveInterval(long idleTimeoutNanos) {
        return idleTimeoutNanos <= 0 ? MAX_KEEP_ALIVE_NANOS : Math.min(MAX_KEEP_ALIVE_NANOS, idleTimeoutNanos / 3);
    }

    long keepAliveNanos() {
        return keepAliveNanos;
    }

    /** Keep-alives sent by this process (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicLong KEEP_ALIVES = new java.util.concurrent.atomic.AtomicLong();

    /**
     * On the progress thread (its IO thread's timer), resting or not: ends the connection when the
     * peer has sent nothing for the idle timeout, and sends a keep-alive when this side has sent
     * nothing for its interval, and has heard the peer since its last one (a silent peer gets one
     * keep-alive, not one every interval). {@code looked}: the timer ran on time before this (else the silence
     * so far is not counted: a thread that was kept from running did not read the peer either). Nothing read here is on the operation path: the byte counts are
     * compared with what the last look saw, so no clock is read per operation.
     */
    void checkIdle(long now, boolean looked) {
        if (!looked) {
            heardAt = now;   // this thread did not look for a while (a pause, a starved host): the peer's silence is not known
        }
        if (!state.started() || state.closed() || state.peerGone() || state.failed() || state.inError()) {
            return;
        }
        long in = responder.bytesIn();
        if (in != heardCount || !responder.atRest()) {   // not at rest: the stream may wait on us (a budget, a receive)
            heardCount = in;
            heardAt = now;
            keepAlive.heard();
        } else if (idleTimeoutNanos > 0 && now - heardAt > idleTimeoutNanos) {
            long ms = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(idleTimeoutNanos);
            Log.limited("tcp.idleTimeout", System.Logger.Level.INFO, "tcp: closed a connection whose peer sent nothing"
                    + " for " + ms + " ms, not even a keep-alive (the idle timeout, Rdma.Builder.idleTimeout)");
            Sockets.shutdown(fd, Sockets.SHUT_RDWR);
            gone("idle timeout: the peer sent nothing for " + ms + " ms, not even a keep-alive");
            return;
        }
        synchronized (txLock) {
            // Only while the peer answers: a jrdma peer's keep-alive answers ours, so an idle
            // pair keeps both up, and a peer that says nothing gets one and no more.
            if (keepAlive.due(now, tx.sentTotal(), tx.idle(), !responder.refusing())) {
                responder.keepAlive();
                KEEP_ALIVES.incrementAndGet();
                keepAlive.sent(now, tx.sentTotal());
            }
        }
    }

    /** Rings the peer: one byte on the socket, which its epoll watches (it drains and ignores them). */
    void doorbell() {
        synchronized (txLock) {
            tx.doorbell();
        }
    }

    /** Ring mode: reads doorbell bytes; true when there were some (more may wait). */
    private boolean drainSocket() {
        long n = Sockets.recv(fd, doorbells.address(), doorbells.byteSize());
        if (n == 0) {
            gone("the peer closed the connection");
        } else if (n < 0 && n != -Errno.EAGAIN && n != -Errno.EINTR) {
            gone("the socket failed: " + Errno.name((int) -n));
        }
        return n > 0;
    }

    /** While a SEND waits for a receive, the socket is not read, so it must not wake the IO thread either. */
    void watchIn(boolean on) {
        if (cq.channel != null) {
            synchronized (txLock) {
                cq.channel.watch(fd, (on ? Sockets.EPOLLIN | Sockets.EPOLLRDHUP : 0)
                        | (watchingOut ? Sockets.EPOLLOUT : 0), false);
            }
        }
    }

    /**
     * MAP_REQUESTs for keys it was not granted that a connection may make before it is ended as a
     * key search: one, the honest race with a region's close (the operation behind it then fails
     * with a remote access error, which ends the connection anyway).
     */
    static final int MAX_UNGRANTED_KEY_MAP_REQUESTS = 1;

    /** Queue pairs ended by a throwable in their progress, in this process (the fuzz tests count them: each is a bug). */
    static final java.util.concurrent.atomic.AtomicLong INTERNAL_FAILURES = new java.util.concurrent.atomic.AtomicLong();

    /** Queue pairs that started in ring mode, in this process (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicLong RING_CONNECTIONS = new java.util.concurrent.atomic.AtomicLong();

    /** Mapped-file ranges forced by PERSISTENT flushes, in this process (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicLong PERSISTENT_FLUSHES = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Our region {@code r} was closed: the peer must stop reaching it directly, and say when it
     * has; false when the connection is over. Any thread. See {@link SameHostMapping#sendUnmap}.
     */
    boolean sendUnmap(TcpMemoryRegistration r) {
        boolean sent = mapping.sendUnmap(r);
        cq.wakeIfResting();   // the answer's wait needs the queue polled
        return sent;
    }

    /**
     * A frame outside the request sequence: the peer's DISCONNECT, or the same-host protocol
     * (MAP and UNMAP); anything else is a lie. False when the connection ended. Progress thread.
     */
    boolean onControlFrame(FrameHeader f) {
        switch (f.type) {
            case DISCONNECT -> {
                gone("the peer disconnected");
                return false;
            }
            case MAP_REQUEST -> {
                return mapping.answerMap(f);
            }
            case MAP_RESPONSE -> {
                return mapping.mapped(f);
            }
            case UNMAP -> {
                return mapping.unmapped(f.rkey);
            }
            case UNMAP_ACK -> {
                mapping.unmapAcknowledged(f.rkey);
                return true;
            }
            default -> {
                malformed("unknown frame type " + f.type);
                return false;
            }
        }
    }

    /**
     * Queues a frame header; under txLock. Any frame but COMPARE_SWAP (whose swap field is its
     * own) and ACK/NAK carries the ACK owed to the peer, if there is one.
     */
    void frameHeader(byte type, int flags, int status, int length, long seq, long remoteAddr, int rkey, int imm,
                             long compareAdd, long swap) {
        if (tx.full()) {
            tx.flush();
        }
        if (type != COMPARE_SWAP && type != ACK && type != NAK && type < MAP_REQUEST) {
            long a = responder.piggybackAck();
            if (a != 0) {
                flags |= FLAG_ACK_PIGGYBACK;
                swap = a;
            }
        }
        TcpFrameDescriptor.write(tx.header(), tx.nextHeaderOffset(), type, flags, status, length, seq, remoteAddr, rkey,
                imm, compareAdd, swap);
        tx.addHeader();
    }

    // ---- requester: completing the send ring

    /** QP in error: every request and receive outstanding completes flushed. On the progress thread. */
    void enterError() {
        if (!state.enterError()) {
            return;
        }
        requester.flush();
        rq.flush(cq);
    }

    /**
     * The socket is done (EOF, reset, DISCONNECT, protocol error): stop reading and tell the
     * connection manager, once. As with rdma_cm, the disconnect event comes first and the QP
     * goes to error when its owner moves it there ({@link #moveToError}), which flushes what is
     * outstanding with the disconnect as the known cause.
     */
    void gone(String reason) {
        if (state.gone()) {
            reportGone(reason);
        }
    }

    /** The transport just ended: the one report of it. */
    private void reportGone(String reason) {
        LOG.log(System.Logger.Level.DEBUG, "tcp QP {0}: {1}", qpNum, reason);
        responder.releasePayload();
        if (cq.channel != null) {
            cq.channel.unwatch(fd);
        }
        mapping.releaseAwaitingUnmap();
        events.peerGone(reason);
    }

    /**
     * Progress threw: this connection ends as if its peer broke the protocol (nothing more of it
     * is applied; its operations complete flushed, with the cause), and the thread goes on.
     */
    void failInternally(Throwable t) {
        QueuePairState.Transport was = state.fail();   // progress does nothing more: what threw is not tried again
        if (was == QueuePairState.Transport.FAILED) {
            return;
        }
        INTERNAL_FAILURES.incrementAndGet();
        try {
            responder.releasePayload();
            Sockets.shutdown(fd, Sockets.SHUT_RDWR);
        } finally {
            if (was.compareTo(QueuePairState.Transport.GONE) < 0) {
                reportGone("internal error: " + t);
            }
            Log.quietly(System.Logger.Level.ERROR, "tcp QP " + qpNum + ": failed on the IO thread; only this connection"
                    + " ends", t);
        }
    }

    /** The peer answered nothing within the budget (the requester failed the request): the connection ends. */
    void peerSilent(String what) {
        end("the peer is silent", "the peer is silent", what);
    }

    /**
     * A frame's payload made no progress within the stall deadline ({@link PayloadBudget#stallNanos}):
     * the connection ends, and with it what the frame held (its parked chunks, its registration).
     */
    void stalled(String what) {
        end("a frame's payload stalled", "payload stalled", what);
    }

    /** The peer broke the protocol: the connection ends, nothing of it is applied. */
    void malformed(String what) {
        offended("protocol error: " + what);
        failConnection(what);
    }

    /**
     * Ends the connection for what the peer did or failed to do, as {@link #malformed} does, but
     * without holding it against the peer's address: an honest peer can be slow (a pause longer
     * than a budget's deadline) or lose a race (two regions closed under its requests).
     */
    void failConnection(String what) {
        end("protocol error from the peer", "protocol error", what);
    }

    /**
     * Ends the connection from this side: logs {@code logged} and {@code what} (a log that fails is
     * dropped), and reports it gone for {@code reason}: {@code what}.
     */
    private void end(String logged, String reason, String what) {
        Log.quietly(System.Logger.Level.WARNING, "tcp QP " + qpNum + ": " + logged + ", closing: " + what, null);
        Sockets.shutdown(fd, Sockets.SHUT_RDWR);
        gone(reason + ": " + what);
    }

    /** The peer misused this connection (see {@link Events#peerOffended}); once per connection is enough. */
    void offended(String what) {
        if (!offenceReported) {
            offenceReported = true;
            events.peerOffended(what);
        }
    }

    private boolean offenceReported;   // progress thread

    /** Tells the peer we disconnect, after what is queued; any thread. */
    void sendDisconnect() {
        synchronized (txLock) {
            if (state.closed() || !state.started()) {
                return;
            }
            frameHeader(DISCONNECT, 0, 0, 0, 0, 0, 0, 0, 0, 0);
            finishTransmit();
            // A backlog still unsent is dropped by shutdown's FIN only after it; the socket keeps it.
            Sockets.shutdown(fd, Sockets.SHUT_WR);
        }
    }

    /**
     * Waits until no direct operation of this QP is under way (one runs under txLock); see
     * {@link TcpRegistrations#quiesce}. Any thread but one inside this QP's txLock of another QP.
     */
    void quiesce() {
        synchronized (txLock) {
            // nothing: entering is the wait
        }
    }

    /** Frees the QP (not the socket: its endpoint closes that). On the progress thread, or once it no longer polls. */
    void close() {
        synchronized (txLock) {
            if (!state.close()) {
                return;
            }
            registrations.removeDirectUser(this);
            cq.detach(this);
            if (cq.channel != null && state.started() && !state.peerGone()) {
                cq.channel.unwatch(fd);
            }
            if (cq.channel != null) {
                cq.channel.unregister(fd, this);
            }
            tx.close();
            responder.close();
            arena.close();
            SameHostPeer peer = sameHost;
            if (peer != null) {
                peer.close();
            }
            ringMode = false;
            if (rings != null) {
                rings.close();
            }
            rxRing = null;
        }
        mapping.releaseAwaitingUnmap();
    }
}
