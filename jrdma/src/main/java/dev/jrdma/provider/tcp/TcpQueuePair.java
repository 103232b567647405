package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;

import dev.jrdma.spi.ShareableMemory;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
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
 * drain or a receive is posted; TCP flow control then holds the peer. Likewise the stream is
 * not read while more than {@value #TX_BACKLOG_LIMIT} bytes of our answers wait for the peer to
 * read them: a peer that stops reading stops being read. After the peer's RNR budget,
 * {@code (rnrRetry + 1) x} {@value #RNR_TIMER_MS} ms without a receive for the SEND at the head,
 * it is refused with {@code IBV_WC_RNR_RETRY_EXC_ERR}; the budget starts again for each SEND
 * that finds no receive.
 */
final class TcpQueuePair implements QueuePair {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    static final long RNR_TIMER_MS = 100;
    private static final int RX_BUFFER = 64 * 1024;
    /** Payload still to come at least this large is read straight into its destination. */
    private static final int DIRECT_READ = 16 * 1024;
    private static final VarHandle LONG_ATOMIC = ValueLayout.JAVA_LONG.varHandle();
    /** Passes of reading per progress call: bounds the time one connection holds the IO thread. */
    private static final int READS_PER_PROGRESS = 16;

    /** What the connection manager learns from the queue pair. */
    interface Events {
        /** The peer disconnected, or the socket failed; called once, on the progress thread. */
        void peerGone(String why);
    }

    private final int fd;
    private final int qpNum;
    final TcpRegistrations registrations;
    final TcpCompletionQueue cq;
    final QueuePairSpec granted;
    private final Events events;
    private final long rnrBudgetNanos;

    private volatile boolean started;
    private volatile boolean errorRequested;
    volatile boolean inError;
    volatile boolean closed;
    private boolean peerGoneReported;
    private boolean failedInternally;

    // ---- same host (shm): the peer's regions mapped here (null: not a peer of this host)
    volatile SameHostPeer sameHost;
    /** The stream ring this side writes (offered to a same-host peer), and the peer's it reads. */
    private static final long RING_BYTES = 1 << 20;
    private ShareableMemory txRingMemory;
    private TcpSameHost txRingSupport;
    private Arena rxRingArena;
    private SharedByteRing rxRing;
    private volatile boolean ringMode;
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

    // ---- send queue: the requester
    private final TcpRequester requester;

    // ---- receive ring: receives posted, consumed by incoming SENDs / WRITE_WITH_IMMs.
    private final TcpReceiveQueue rq;

    // ---- transmit side, shared by posters and the progress thread
    /**
     * Guards the send side against the progress thread. It is the lock the QP's owner posts
     * under (QueuePairSpec.postLock: the Connection's), when it gives one: a post then takes one
     * lock, the owner's, and this one again only as a recursive (free) monitor enter.
     */
    final Object txLock;
    final TcpTransmitter tx;
    private boolean watchingOut;

    // ---- receive side: the progress thread only
    private final Arena arena = Arena.ofShared();
    private final MemorySegment rx = arena.allocate(RX_BUFFER, 64);
    private final MemorySegment doorbells = arena.allocate(64, 8);
    private int rxStart, rxEnd;
    private boolean inFrame;            // a header was read; its payload may still be coming
    /** Our answers waiting for the peer to read them, beyond which its requests are not read. */
    static final long TX_BACKLOG_LIMIT = 4L << 20;
    /** The peer's requests parked behind a SEND that found no receive (RNR), replayed in order. */
    private final ParkedRequests parked = new ParkedRequests();
    private boolean replaying;
    /**
     * The current frame's header is read but the frame is not taken: parking it would exceed the
     * budget, or too many answers wait to be sent. The stream is not read past it until it is.
     */
    private volatile boolean deferred;   // written by the progress thread; posters read it to set the socket's watch
    private final FrameHeader deferredFrame = new FrameHeader();
    /** The frame being read (or replayed from the parked ones). */
    private final FrameHeader f = new FrameHeader();
    private long payloadDest;           // where the payload goes; 0: discarded
    private long payloadLeft;
    private TcpMemoryRegistration payloadRegistration;   // entered while payload is placed
    private volatile long rnrSince;     // when the first parked SEND began waiting for a receive; 0: not waiting
    private boolean refusing;           // we NAKed a request: apply nothing more from the peer
    private long lastRequestSeq;        // the peer's requests received so far (applied or parked)
    private long ackWanted;             // the highest request of the peer's that asked for an ACK
    private volatile long ackReady;     // ackWanted, published for posting threads
    private volatile long ackSentTx;    // the highest ACK sent, piggybacked or not; written under txLock
    private boolean ackHeld;            // an ACK waited one pass for a frame to ride on
    private final StringBuilder why = new StringBuilder();

    TcpQueuePair(int fd, int qpNum, TcpRegistrations registrations, TcpCompletionQueue cq, QueuePairSpec spec,
                 Events events, TcpSameHost support) {
        this.fd = fd;
        this.qpNum = qpNum;
        this.registrations = registrations;
        this.cq = cq;
        this.granted = spec;
        this.txLock = spec.postLock() != null ? spec.postLock() : new Object();
        this.events = events;
        this.rnrBudgetNanos = (spec.rnrRetry() + 1L) * RNR_TIMER_MS * 1_000_000L;
        requester = new TcpRequester(this, spec.sendDepth());
        rq = new TcpReceiveQueue(spec.recvDepth());
        tx = new TcpTransmitter(fd);
        if (support != null) {
            txRingMemory = support.allocate(SharedByteRing.HEADER + RING_BYTES);
            txRingSupport = support;
        }
        cq.attach(this);
    }

    int fd() {
        return fd;
    }

    /**
     * The handshake is done: the socket is this QP's from now on. {@code sameHostPeer}: the
     * peer shares this host (same boot id), so shareable regions are reached directly through
     * {@code support}, the peer being process {@code pid}.
     */
    void start(TcpSameHost support, boolean sameHostPeer, long pid, boolean rings) {
        if (support != null && sameHostPeer) {
            registrations.addDirectUser(this);   // before sameHost: a direct operation needs the quiesce
            sameHost = new SameHostPeer(support, pid);
        }
        if (rings && txRingMemory != null && rxRing != null) {
            ringMode = true;
            RING_CONNECTIONS.incrementAndGet();
            tx.useRing(new SharedByteRing(txRingMemory.segment()));
        } else {
            dropRings();
        }
        started = true;
        if (cq.channel != null) {
            cq.channel.watch(fd, Sockets.EPOLLIN | Sockets.EPOLLRDHUP, true);
            cq.channel.wake();
        }
    }

    /** {fd, offset, size} of the ring this side writes, for the handshake; null when there is none. */
    long[] txRingLocation() {
        if (txRingMemory == null) {
            return null;
        }
        long[] where = txRingSupport.locate(txRingMemory.segment());
        return where == null ? null : new long[] {where[0], where[1], txRingMemory.segment().byteSize()};
    }

    /** Maps the peer's ring (it writes, this side reads); false when it cannot be. */
    boolean mapPeerRing(long pid, int fd, long offset, long size) {
        if (txRingSupport == null || size <= SharedByteRing.HEADER || size > (1L << 30)) {
            return false;
        }
        Arena a = Arena.ofShared();
        MemorySegment m;
        try {
            m = txRingSupport.map(pid, fd, offset, size, true, a);
        } catch (RuntimeException e) {
            m = null;
        }
        if (m == null) {
            a.close();
            return false;
        }
        rxRingArena = a;
        rxRing = new SharedByteRing(m);
        return true;
    }

    private void dropRings() {
        if (txRingMemory != null) {
            txRingMemory.close();
            txRingMemory = null;
        }
        if (rxRingArena != null) {
            rxRingArena.close();
            rxRingArena = null;
            rxRing = null;
        }
    }

    /**
     * About to sleep (ring mode): ask the peer to ring the socket when it writes. The peer takes
     * the flag back when it rings; this side never clears it (see TcpCompletionQueue.armed).
     */
    void armRing() {
        if (ringMode && !closed) {
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
        return requester.postSend(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
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
        return requester.postStaged(count);
    }

    @Override
    public int firstUnposted() {
        return requester.firstUnposted();
    }

    /** After queueing: send, and watch for room when the socket did not take everything. */
    void finishTransmit() {
        boolean done = tx.flush();
        if (ringMode) {
            return;   // room in the ring comes with a doorbell from the peer (SharedByteRing's "waits")
        }
        if (cq.channel != null && started && done == watchingOut) {
            watchingOut = !done;
            cq.channel.watch(fd, (deferred ? 0 : Sockets.EPOLLIN | Sockets.EPOLLRDHUP) | (watchingOut ? Sockets.EPOLLOUT : 0),
                    false);
        }
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        if (closed) {
            return Errno.EINVAL;
        }
        if (length > 0 && registrations.check(lkey, localAddr, length, AccessFlags.LOCAL_WRITE, null) == null) {
            return Errno.EINVAL;
        }
        int rc = rq.post(wrId, localAddr, length, lkey);
        if (rc != 0) {
            return rc;
        }
        if ((rnrSince != 0 || deferred) && cq.channel != null) {
            cq.channel.wake();   // a parked SEND may go now
        }
        return 0;
    }

    @Override
    public int queryState() {
        return inError || errorRequested ? STATE_ERR : started ? STATE_RTS : STATE_INIT;
    }

    @Override
    public void moveToError() {
        errorRequested = true;
        if (cq.channel != null) {
            cq.channel.wake();
        }
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
        if (closed) {
            return;
        }
        if (errorRequested && !inError) {
            enterError();
        }
        if (failedInternally) {
            return;   // what threw is not tried again; the owner closes the connection
        }
        if (FAULT_INJECTION && progressFault != null) {
            progressFault.accept(this);
        }
        if (!started) {
            return;
        }
        if (!tx.idle()) {
            synchronized (txLock) {
                finishTransmit();
            }
        }
        if (tx.failedErrno() != 0) {
            gone("sending failed: " + Errno.name(tx.failedErrno()) + " (" + Errno.describe(tx.failedErrno()) + ")");
        }
        requester.completeReady();
        if (!peerGoneReported && ringMode) {
            receive();
            if ((++socketSkips & 7) == 0) {
                long now = System.nanoTime();
                if (now - nextSocketCheck >= 0) {
                    nextSocketCheck = drainSocket() ? 0 : now + RING_SOCKET_CHECK_NANOS;
                }
            }
            if (!peerGoneReported) {
                sendAck();
            }
            return;
        }
        if (!peerGoneReported) {
            if (sameHost != null && !inFrame && rxStart == rxEnd) {
                // One-sided traffic bypasses the socket; look at it every 2 us, not every pass
                // (a recv per pass would be most of a busy IO thread's time); and read the clock
                // only every 8th pass.
                if ((++socketSkips & 7) != 0 && nextSocketCheck != 0) {
                    sendAck();
                    return;
                }
                long now = System.nanoTime();
                if (now - nextSocketCheck < 0) {
                    sendAck();
                    return;
                }
                int before = rxEnd;
                receive();
                if (rxEnd == before && !inFrame) {
                    nextSocketCheck = now + 2_000;
                } else {
                    nextSocketCheck = 0;   // traffic: look again on the next pass
                }
            } else {
                receive();
            }
            sendAck();
        }
    }

    private void receive() {
        if (deferred && !retryDeferred()) {
            return;
        }
        if (!inFrame && !parked.isEmpty()) {
            replayParked();
        }
        for (int reads = 0; reads < READS_PER_PROGRESS && !peerGoneReported && !deferred; ) {
            if (inFrame) {
                int buffered = rxEnd - rxStart;
                if (buffered > 0) {
                    int take = (int) Math.min(buffered, payloadLeft);
                    place(rx.address() + rxStart, take);
                    rxStart += take;
                    continue;
                }
                if (payloadLeft >= DIRECT_READ && payloadDest != 0) {
                    long n = streamRead(payloadDest, payloadLeft);
                    reads++;
                    if (n <= 0) {
                        if (!readFailed(n)) {
                            return;
                        }
                        continue;
                    }
                    payloadDest += n;
                    payloadLeft -= n;
                    if (payloadLeft == 0) {
                        endPayload();
                    }
                    continue;
                }
            } else if (rxEnd - rxStart >= HEADER_SIZE) {
                int at = rxStart;
                rxStart += HEADER_SIZE;
                beginFrame(at);
                continue;
            }
            // Need more bytes in the buffer.
            if (rxStart == rxEnd) {
                rxStart = rxEnd = 0;
            } else if (rxStart > 0 && RX_BUFFER - rxEnd < HEADER_SIZE) {
                MemorySegment.copy(rx, rxStart, rx, 0, rxEnd - rxStart);
                rxEnd -= rxStart;
                rxStart = 0;
            }
            long n = streamRead(rx.address() + rxEnd, RX_BUFFER - rxEnd);
            reads++;
            if (n <= 0) {
                if (!readFailed(n)) {
                    return;
                }
                continue;
            }
            rxEnd += (int) n;
        }
    }

    /**
     * Reads the peer's frames: from the socket, or in ring mode from the peer's ring (then 0
     * bytes is "nothing now", -EAGAIN, since the socket, not the ring, says when the peer is gone).
     */
    private long streamRead(long address, long length) {
        if (!ringMode) {
            return Sockets.recv(fd, address, length);
        }
        long n = rxRing.read(address, length);
        if (n < 0) {
            malformed("the peer's ring positions are impossible");
            return -Errno.EIO;
        }
        if (n > 0 && rxRing.producerWaits()) {
            doorbell();
        }
        return n == 0 ? -Errno.EAGAIN : n;
    }

    /** Rings the peer: one byte on the socket, which its epoll watches (it drains and ignores them). */
    private void doorbell() {
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

    /** A recv returned {@code n} <= 0: true to go on reading, false when there is nothing now. */
    private boolean readFailed(long n) {
        if (n == 0) {
            gone("the peer closed the connection");
            return false;
        }
        int errno = (int) -n;
        if (errno == Errno.EAGAIN || errno == Errno.EINTR) {
            return false;
        }
        gone("receiving failed: " + Errno.name(errno) + " (" + Errno.describe(errno) + ")");
        return false;
    }

    /** Copies {@code count} buffered payload bytes to where they go (or drops them). */
    private void place(long from, int count) {
        if (payloadDest != 0) {
            MemorySegment.copy(MemorySegment.ofAddress(from).reinterpret(count), 0,
                    MemorySegment.ofAddress(payloadDest).reinterpret(count), 0, count);
            payloadDest += count;
        }
        payloadLeft -= count;
        if (payloadLeft == 0) {
            endPayload();
        }
    }

    private void beginFrame(int at) {
        f.decode(rx, at);
        inFrame = true;
        payloadDest = 0;
        payloadLeft = 0;
        payloadRegistration = null;
        if (f.length < 0 || (f.length > 0 && f.type != SEND && f.type != WRITE && f.type != READ_RESPONSE)) {
            malformed("a " + typeName(f.type) + " frame claims " + f.length + " payload bytes");
            return;
        }
        if (f.type < ACK) {
            if (f.seq != lastRequestSeq + 1) {
                malformed("request " + f.seq + " arrived after request " + lastRequestSeq + " (out of order)");
                return;
            }
            lastRequestSeq = f.seq;   // received: counted here, whether it is applied now or parked
        }
        if ((f.flags & FLAG_ACK_PIGGYBACK) != 0 && f.type != COMPARE_SWAP) {
            requester.retire(f.swap, true);
            if (peerGoneReported) {
                return;
            }
        }
        if (f.type < ACK && !refusing && tx.backlogBytes() > TX_BACKLOG_LIMIT) {
            defer();   // the peer is not reading our answers: read no more of its requests
            return;
        }
        dispatch();
    }

    /** Takes the current frame: parks it behind parked ones, or applies it (or starts its payload). */
    private void dispatch() {
        if (f.type < ACK && !parked.isEmpty() && !refusing) {
            if (!park()) {
                return;   // requests after a parked one wait behind it, in order; no room: deferred
            }
        } else if (!continueFrame()) {
            return;   // the connection ended (protocol error, the peer gone), or the frame was deferred
        }
        if (payloadLeft == 0) {
            endPayload();
        }
    }

    /** The current frame waits, unread past its header, and so does the stream (see {@link #deferred}). */
    private void defer() {
        if (!deferred) {
            deferred = true;
            deferredFrame.copyFrom(f);   // replaying parked frames meanwhile reuses the current frame
            if (!ringMode) {
                watchIn(false);   // a receive posted (postRecv) or the socket taking our answers wakes the thread
            }
        }
    }

    /** Tries the deferred frame again; true when it was taken and the stream may be read on. */
    private boolean retryDeferred() {
        if (!parked.isEmpty()) {
            replayParked();
        }
        if (peerGoneReported || (tx.backlogBytes() > TX_BACKLOG_LIMIT && !refusing)) {
            return false;
        }
        deferred = false;
        load(deferredFrame);
        dispatch();
        if (deferred) {
            return false;
        }
        if (!ringMode && !peerGoneReported) {
            watchIn(true);
        }
        return true;
    }

    /**
     * Parks the current request: its payload goes into a buffer of its own, and it is applied
     * later, in order. False when that would exceed the budget ({@link ParkedRequests#BUDGET}):
     * then nothing is allocated and the frame is {@link #defer deferred}.
     */
    private boolean park() {
        if (!parked.fits(f.length)) {
            defer();
            return false;
        }
        payloadDest = parked.park(f);
        payloadLeft = f.length;
        return true;
    }

    /** Makes {@code h} the current frame, its payload not started. */
    private void load(FrameHeader h) {
        f.copyFrom(h);
        inFrame = true;
        payloadDest = 0;
        payloadLeft = 0;
        payloadRegistration = null;
    }

    /** Applies parked requests in order, as far as receives are posted for the SENDs among them. */
    private void replayParked() {
        while (!parked.isEmpty() && !peerGoneReported) {
            ParkedRequests.Parked p = parked.first();
            load(p.header);
            replaying = true;
            boolean go;
            try {
                go = continueFrame();
            } finally {
                replaying = false;
            }
            if (!go) {
                inFrame = false;
                return;   // still no receive for it (within the RNR budget)
            }
            rnrSince = 0;   // the head went: the next SEND that finds no receive has a budget of its own
            if (payloadLeft > 0) {
                place(p.payloadAddress(), (int) payloadLeft);   // ends the frame
            } else {
                endPayload();
            }
            parked.removeFirst();
        }
    }

    /**
     * Decides where the current frame's payload goes and applies what has no payload. Returns
     * false while a SEND waits for a receive (the frame stays current).
     */
    private boolean continueFrame() {
        if (peerGoneReported) {
            return false;
        }
        if (f.type < ACK && inError && !refusing) {
            // An RC QP in error answers nothing and its peer's request times out; say so at once.
            refuse(WorkCompletion.RETRY_EXC_ERR, typeName(f.type), "this side's queue pair is in error");
        }
        switch (f.type) {
            case SEND -> {
                if (refusing) {
                    payloadLeft = f.length;
                    return true;
                }
                return takeReceive(false);
            }
            case WRITE -> {
                if (refusing) {
                    payloadLeft = f.length;
                    return true;
                }
                if ((f.flags & FLAG_IMM) != 0) {
                    if (!takeReceive(true)) {
                        return false;
                    }
                    if (parked.filling()) {
                        return true;   // parked until a receive is posted for its immediate
                    }
                }
                if (f.length > 0) {
                    why.setLength(0);
                    TcpMemoryRegistration r = registrations.check(f.rkey, f.addr, f.length, AccessFlags.REMOTE_WRITE, why);
                    if (r == null || !r.enter()) {
                        refuse(WorkCompletion.REM_ACCESS_ERR, "WRITE", r == null ? why : "the region was closed");
                        payloadLeft = f.length;
                        return true;
                    }
                    payloadRegistration = r;
                    payloadDest = f.addr;
                    payloadLeft = f.length;
                }
                return true;
            }
            case READ_REQUEST -> {
                if (!refusing) {
                    respondToRead();
                }
                return true;
            }
            case COMPARE_SWAP, FETCH_ADD -> {
                if (!refusing) {
                    respondToAtomic();
                }
                return true;
            }
            case FLUSH -> {
                if (!refusing) {
                    applyFlush();
                }
                return true;
            }
            case ACK -> {
                requester.retire(f.seq, true);
                return true;
            }
            case NAK -> {
                requester.retire(f.seq - 1, true);
                requester.failHead(f.seq, f.status);
                return true;
            }
            case READ_RESPONSE -> {
                requester.retire(f.seq - 1, true);
                if (!requester.headIs(f.seq, WR_RDMA_READ) || f.length != requester.headLength()) {
                    malformed("READ_RESPONSE " + f.seq + " of " + f.length + " bytes answers no read outstanding");
                    return false;
                }
                TcpMemoryRegistration r = f.length == 0 ? null : registrations.lookup(requester.headLkey());
                if (r != null && r.enter()) {
                    payloadRegistration = r;
                    payloadDest = requester.headLocalAddress();
                }
                payloadLeft = f.length;   // a local buffer closed meanwhile: the bytes are dropped
                return true;
            }
            case ATOMIC_RESPONSE -> {
                requester.retire(f.seq - 1, true);
                if (!requester.headIs(f.seq, WR_ATOMIC_CMP_AND_SWP) && !requester.headIs(f.seq, WR_ATOMIC_FETCH_AND_ADD)) {
                    malformed("ATOMIC_RESPONSE " + f.seq + " answers no atomic outstanding");
                    return false;
                }
                TcpMemoryRegistration r = registrations.lookup(requester.headLkey());
                if (r != null && r.enter()) {
                    try {
                        MemorySegment.ofAddress(requester.headLocalAddress()).reinterpret(8).set(ValueLayout.JAVA_LONG_UNALIGNED, 0,
                                f.compareAdd);
                    } finally {
                        r.exit();
                    }
                }
                return true;
            }
            case DISCONNECT -> {
                gone("the peer disconnected");
                return false;
            }
            case MAP_REQUEST -> {
                answerMap();
                return true;
            }
            case MAP_RESPONSE -> {
                return mapped();
            }
            case UNMAP -> {
                SameHostPeer peer = sameHost;
                if (peer == null) {
                    malformed("UNMAP from a peer that is not on this host");
                    return false;
                }
                synchronized (txLock) {
                    // Direct operations run under txLock: none is under way, none comes after.
                    peer.remove(f.rkey);
                    if (!closed) {
                        frameHeader(UNMAP_ACK, 0, 0, 0, 0, 0, f.rkey, 0, 0, 0);
                        finishTransmit();
                    }
                }
                return true;
            }
            case UNMAP_ACK -> {
                SameHostPeer peer = sameHost;
                TcpMemoryRegistration r = null;
                if (peer != null) {
                    synchronized (txLock) {
                        r = peer.unmapAcknowledged(f.rkey);
                    }
                }
                if (r != null) {
                    r.peerLetGo();
                }
                return true;
            }
            default -> {
                malformed("unknown frame type " + f.type);
                return false;
            }
        }
    }

    /** The frame (and its payload) is done: complete what it completes. */
    private void endPayload() {
        cq.served++;   // a pass that ends a frame did work, even when it completes nothing here
        if (payloadRegistration != null) {
            payloadRegistration.exit();
            payloadRegistration = null;
        }
        inFrame = false;
        if (parked.filling()) {
            parked.filled();   // read whole; applied in order by replayParked
            return;
        }
        if (peerGoneReported) {
            return;
        }
        switch (f.type) {
            case SEND, WRITE -> {
                if (!refusing) {
                    if (f.type == SEND || (f.flags & FLAG_IMM) != 0) {
                        cq.add(rq.take(), WorkCompletion.SUCCESS,
                                f.type == SEND ? WorkCompletion.OP_RECV : WorkCompletion.OP_RECV_RDMA_WITH_IMM, f.length,
                                f.imm, (f.flags & FLAG_IMM) != 0);
                    }
                    if ((f.flags & FLAG_ACK_REQUESTED) != 0) {
                        ackWanted = f.seq;
                        ackReady = f.seq;
                    }
                }
            }
            case READ_RESPONSE, ATOMIC_RESPONSE -> requester.retire(f.seq, true);
            case FLUSH -> {
                if (!refusing) {
                    ackWanted = f.seq;
                    ackReady = f.seq;
                }
            }
            default -> {
                // READ and atomics: their response answers them (and everything before them).
            }
        }
    }

    /**
     * The current SEND (or WRITE_WITH_IMM) needs a posted receive. False while none is posted,
     * within the RNR budget; past it, the request is refused with RNR_RETRY_EXC_ERR.
     */
    private boolean takeReceive(boolean forImm) {
        if (rq.isEmpty()) {
            long now = System.nanoTime();
            if (rnrSince == 0) {
                rnrSince = now;
            }
            if (!replaying && parked.isEmpty() && park()) {
                // Parked (and, in order, every request after it): the stream is read on.
                return true;
            }
            if (now - rnrSince < rnrBudgetNanos) {
                return false;   // waits at the head of the parked ones, or deferred
            }
            rnrSince = 0;
            refuse(WorkCompletion.RNR_RETRY_EXC_ERR, forImm ? "WRITE_WITH_IMM" : "SEND",
                    "no receive was posted within " + rnrBudgetNanos / 1_000_000 + " ms");
            payloadLeft = f.length;
            return true;
        }
        if (forImm) {
            return true;   // the receive is consumed when the write completes
        }
        if (f.length > rq.headLength()) {
            // RC: the receiver's WR completes with LOC_LEN_ERR, the sender's with REM_INV_REQ_ERR.
            int room = rq.headLength();
            cq.add(rq.take(), WorkCompletion.LOC_LEN_ERR, WorkCompletion.OP_RECV, f.length, 0, false);
            refuse(WorkCompletion.REM_INV_REQ_ERR, "SEND", f.length + " bytes exceed the receive buffer of "
                    + room);
            payloadLeft = f.length;
            return true;
        }
        if (f.length > 0) {
            TcpMemoryRegistration r = registrations.lookup(rq.headLkey());
            if (r != null && r.enter()) {
                payloadRegistration = r;
                payloadDest = rq.headAddress();
            }
        }
        payloadLeft = f.length;
        return true;
    }

    /** While a SEND waits for a receive, the socket is not read, so it must not wake the IO thread either. */
    private void watchIn(boolean on) {
        if (cq.channel != null) {
            synchronized (txLock) {
                cq.channel.watch(fd, (on ? Sockets.EPOLLIN | Sockets.EPOLLRDHUP : 0)
                        | (watchingOut ? Sockets.EPOLLOUT : 0), false);
            }
        }
    }

    /**
     * A FLUSH: the writes before it are applied already (in order, by this thread), so
     * visibility holds; for persistence, a region that is a mapped file is forced to storage.
     * It is acknowledged like a write (endPayload: it always asks for an ACK).
     */
    private void applyFlush() {
        why.setLength(0);
        long length = f.compareAdd;
        TcpMemoryRegistration r = length <= 0 ? null
                : registrations.check(f.rkey, f.addr, length, AccessFlags.REMOTE_READ, why);
        if (length > 0 && (r == null || !r.enter())) {
            refuse(WorkCompletion.REM_ACCESS_ERR, "FLUSH", r == null ? why : "the region was closed");
            return;
        }
        if (r == null) {
            return;
        }
        try {
            if (f.imm == 1 && r.memory().isMapped()) {
                r.memory().asSlice(f.addr - r.memory().address(), length).force();
                PERSISTENT_FLUSHES.incrementAndGet();
            }
        } catch (RuntimeException e) {
            refuse(WorkCompletion.REM_OP_ERR, "FLUSH", "forcing the mapped file failed: " + e);
        } finally {
            r.exit();
        }
    }

    /** MAP_REQUESTs for keys that name no memory a connection may make before it is ended as a key search. */
    static final int MAX_UNKNOWN_KEY_MAP_REQUESTS = 16;
    private int unknownKeyMapRequests;

    /** Queue pairs that started in ring mode, in this process (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicLong RING_CONNECTIONS = new java.util.concurrent.atomic.AtomicLong();

    /** Mapped-file ranges forced by PERSISTENT flushes, in this process (for tests and diagnostics). */
    static final java.util.concurrent.atomic.AtomicLong PERSISTENT_FLUSHES = new java.util.concurrent.atomic.AtomicLong();

    /** The peer asks where our region {@code f.rkey} lives, to map it: tell it (or that it is not shareable). */
    private void answerMap() {
        SameHostPeer peer = sameHost;
        TcpSameHost support = peer == null ? null : peer.support;
        TcpMemoryRegistration r = registrations.lookup(f.rkey);
        if (r == null && ++unknownKeyMapRequests > MAX_UNKNOWN_KEY_MAP_REQUESTS) {
            // An honest peer asks only for keys it was given: one that was closed since fails
            // the operation behind it, and the connection with it. Many are a search for keys.
            malformed(unknownKeyMapRequests + " MAP_REQUESTs named keys that name no memory (probing for keys)");
            return;
        }
        // Memory registered for local access only (the pool's chunks) is never mapped by a peer.
        long[] where = support == null || r == null
                || (r.access() & (AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) == 0
                ? null : support.locate(r.memory());
        synchronized (txLock) {
            if (where == null) {
                frameHeader(MAP_RESPONSE, 0, 1, 0, 0, 0, f.rkey, 0, 0, 0);
            } else {
                r.sharedWith(this);
                frameHeader(MAP_RESPONSE, 0, 0, 0, r.access(), r.memory().address(), f.rkey, (int) where[0],
                        r.memory().byteSize(), where[1]);
            }
            finishTransmit();
        }
    }

    /**
     * The peer said where its region lives: map it, so that later operations on it are done
     * here. False (the connection ends) for an answer nobody asked for.
     */
    private boolean mapped() {
        SameHostPeer peer = sameHost;
        boolean asked;
        synchronized (txLock) {
            asked = peer != null && peer.answered(f.rkey);
        }
        if (!asked) {
            malformed("a MAP_RESPONSE for key 0x" + Integer.toHexString(f.rkey) + ", which was not asked about");
            return false;
        }
        if (f.status != 0 || f.compareAdd <= 0) {
            return true;   // not shareable: it stays on the socket (and is not asked again)
        }
        int access = (int) f.seq;
        boolean writable = (access & (AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0;
        Arena a = Arena.ofShared();
        MemorySegment m;
        try {
            m = peer.support.map(peer.pid, f.imm, f.swap, f.compareAdd, writable, a);
        } catch (RuntimeException e) {
            m = null;
        }
        if (m == null) {
            a.close();
            return true;
        }
        synchronized (txLock) {
            if (closed) {
                a.close();
                return true;
            }
            peer.add(f.rkey, new SameHostPeer.PeerRegion(f.addr, f.compareAdd, access, m, a));
        }
        return true;
    }

    /**
     * Our region {@code r} was closed: the peer must stop reaching it directly, and say when it
     * has (UNMAP_ACK: then {@link TcpMemoryRegistration#peerLetGo}). False when the connection
     * is over (nothing was sent; the peer no longer posts on it). Any thread.
     */
    boolean sendUnmap(TcpMemoryRegistration r) {
        synchronized (txLock) {
            SameHostPeer peer = sameHost;
            if (!closed && started && !peerGoneReported && peer != null) {
                peer.awaitUnmap(r);
                frameHeader(UNMAP, 0, 0, 0, 0, 0, r.rkey(), 0, 0, 0);
                finishTransmit();
                return true;
            }
            return false;
        }
    }

    /** The connection is over: the peer posts no more on it, so it holds none of our regions. */
    private void releaseAwaitingUnmap() {
        SameHostPeer peer = sameHost;
        if (peer == null) {
            return;
        }
        java.util.List<TcpMemoryRegistration> all;
        synchronized (txLock) {
            all = peer.takeAwaitingUnmap();
        }
        for (TcpMemoryRegistration r : all) {
            r.peerLetGo();
        }
    }

    private void respondToRead() {
        int length = (int) f.compareAdd;
        if (f.compareAdd < 0 || f.compareAdd > MAX_PAYLOAD) {
            refuse(WorkCompletion.REM_INV_REQ_ERR, "READ", "it asks for " + f.compareAdd + " bytes");
            return;
        }
        TcpMemoryRegistration r = null;
        if (length > 0) {
            why.setLength(0);
            r = registrations.check(f.rkey, f.addr, length, AccessFlags.REMOTE_READ, why);
            if (r == null || !r.enter()) {
                refuse(WorkCompletion.REM_ACCESS_ERR, "READ", r == null ? why : "the region was closed");
                return;
            }
        }
        synchronized (txLock) {
            respondHeader(READ_RESPONSE, 0, length, f.seq, 0);
            tx.addPayload(f.addr, length, r);
            finishTransmit();
        }
    }

    private void respondToAtomic() {
        why.setLength(0);
        TcpMemoryRegistration r = registrations.check(f.rkey, f.addr, 8, AccessFlags.REMOTE_ATOMIC, why);
        if (r == null || (f.addr & 7) != 0 || !r.enter()) {
            if (r != null && (f.addr & 7) != 0) {
                refuse(WorkCompletion.REM_INV_REQ_ERR, typeName(f.type), "address 0x" + Long.toHexString(f.addr)
                        + " is not 8-byte aligned");
            } else {
                refuse(WorkCompletion.REM_ACCESS_ERR, typeName(f.type), r == null ? why : "the region was closed");
            }
            return;
        }
        long prior;
        try {
            MemorySegment word = MemorySegment.ofAddress(f.addr).reinterpret(8);
            prior = f.type == COMPARE_SWAP
                    ? (long) LONG_ATOMIC.compareAndExchange(word, 0L, f.compareAdd, f.swap)
                    : (long) LONG_ATOMIC.getAndAdd(word, 0L, f.compareAdd);
        } finally {
            r.exit();
        }
        synchronized (txLock) {
            respondHeader(ATOMIC_RESPONSE, 0, 0, f.seq, prior);
            finishTransmit();
        }
    }

    /** A response frame (READ_RESPONSE, ATOMIC_RESPONSE, DISCONNECT), with any ACK owed riding on it; under txLock. */
    private void respondHeader(byte type, int status, int length, long seq, long value) {
        frameHeader(type, 0, status, length, seq, 0, 0, 0, value, 0);
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
            long a = ackReady;
            if (a > ackSentTx && !refusing) {
                ackSentTx = a;
                flags |= FLAG_ACK_PIGGYBACK;
                swap = a;
            }
        }
        TcpFrameDescriptor.write(tx.header(), tx.nextHeaderOffset(), type, flags, status, length, seq, remoteAddr, rkey,
                imm, compareAdd, swap);
        tx.addHeader();
    }

    /**
     * After a pass of reading: an ACK still owed waits one pass for a frame going back to ride
     * on (the peer's ping-pong answer, a read response), then goes alone.
     */
    private void sendAck() {
        if (ackWanted > ackSentTx && !refusing) {
            if (!ackHeld) {
                ackHeld = true;
                return;
            }
            flushAck();
        } else {
            ackHeld = false;
        }
    }

    /** Sends an ACK owed now, if any (before the IO thread sleeps: nothing may wait for a next pass). */
    void flushAck() {
        ackHeld = false;
        if (refusing) {
            return;
        }
        synchronized (txLock) {
            long a = ackReady;
            if (a > ackSentTx && !closed && started) {
                ackSentTx = a;
                frameHeader(ACK, 0, 0, 0, a, 0, 0, 0, 0, 0);
                finishTransmit();
            }
        }
    }

    /** Refuses the current request: NAK it, and apply nothing more from the peer (RC: the connection ends). */
    private void refuse(int status, String what, CharSequence reason) {
        LOG.log(System.Logger.Level.DEBUG, "tcp QP {0}: refused {1} {2}: {3} ({4})", qpNum, what, f.seq, reason,
                WorkCompletion.statusName(status));
        refusing = true;
        synchronized (txLock) {
            long a = ackReady;
            if (a > ackSentTx && a < f.seq) {
                ackSentTx = a;
                frameHeader(ACK, 0, 0, 0, a, 0, 0, 0, 0, 0);
            }
            frameHeader(NAK, 0, status, 0, f.seq, 0, 0, 0, 0, 0);
            finishTransmit();
        }
    }

    // ---- requester: completing the send ring

    /** QP in error: every request and receive outstanding completes flushed. On the progress thread. */
    void enterError() {
        inError = true;
        requester.flush();
        while (!rq.isEmpty()) {
            cq.add(rq.take(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
        }
    }

    /**
     * The socket is done (EOF, reset, DISCONNECT, protocol error): stop reading and tell the
     * connection manager, once. As with rdma_cm, the disconnect event comes first and the QP
     * goes to error when its owner moves it there ({@link #moveToError}), which flushes what is
     * outstanding with the disconnect as the known cause.
     */
    private void gone(String reason) {
        if (peerGoneReported) {
            return;
        }
        peerGoneReported = true;
        LOG.log(System.Logger.Level.DEBUG, "tcp QP {0}: {1}", qpNum, reason);
        if (payloadRegistration != null) {
            payloadRegistration.exit();
            payloadRegistration = null;
        }
        if (cq.channel != null) {
            cq.channel.unwatch(fd);
        }
        releaseAwaitingUnmap();
        events.peerGone(reason);
    }

    /**
     * Progress threw: this connection ends as if its peer broke the protocol (nothing more of it
     * is applied; its operations complete flushed, with the cause), and the thread goes on.
     */
    void failInternally(Throwable t) {
        if (failedInternally) {
            return;
        }
        failedInternally = true;   // progress does nothing more: what threw is not tried again
        try {
            if (payloadRegistration != null) {
                payloadRegistration.exit();
                payloadRegistration = null;
            }
            Sockets.shutdown(fd, Sockets.SHUT_RDWR);
        } finally {
            gone("internal error: " + t);
            Log.quietly(System.Logger.Level.ERROR, "tcp QP " + qpNum + ": failed on the IO thread; only this connection"
                    + " ends", t);
        }
    }

    /** The peer broke the protocol: the connection ends, nothing of it is applied. */
    void malformed(String what) {
        LOG.log(System.Logger.Level.WARNING, "tcp QP {0}: protocol error from the peer, closing: {1}", qpNum, what);
        Sockets.shutdown(fd, Sockets.SHUT_RDWR);
        gone("protocol error: " + what);
    }

    /** Tells the peer we disconnect, after what is queued; any thread. */
    void sendDisconnect() {
        synchronized (txLock) {
            if (closed || !started) {
                return;
            }
            respondHeader(DISCONNECT, 0, 0, 0, 0);
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
            if (closed) {
                return;
            }
            closed = true;
            registrations.removeDirectUser(this);
            cq.detach(this);
            if (cq.channel != null && started && !peerGoneReported) {
                cq.channel.unwatch(fd);
            }
            if (payloadRegistration != null) {
                payloadRegistration.exit();
                payloadRegistration = null;
            }
            tx.close();
            arena.close();
            SameHostPeer peer = sameHost;
            if (peer != null) {
                peer.close();
            }
            ringMode = false;
            dropRings();
            parked.close();
        }
        releaseAwaitingUnmap();
    }
}
