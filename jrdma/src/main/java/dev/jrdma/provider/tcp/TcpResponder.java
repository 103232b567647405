package dev.jrdma.provider.tcp;

import dev.jrdma.os.LibC;
import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;

import dev.jrdma.os.Errno;
import dev.jrdma.os.Sockets;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The responder side of a tcp queue pair, on the progress thread: it reads the peer's frames
 * (from the socket, or from the peer's ring on a same-host connection), checks each as hostile
 * input (sequence, length, key, bounds, access), applies requests to this device's
 * registrations (SEND into a posted receive, WRITE, READ, atomics, FLUSH) and answers them in
 * order; responses to this side's own requests go to the {@link TcpRequester}. It keeps every
 * peer within its budgets: requests parked behind a SEND that waits for a receive
 * ({@link ParkedRequests}, within this connection's budget and the process's {@link PayloadBudget}),
 * past which the stream is not read, a payload that stops coming (past the stall deadline the
 * connection ends), and answers the peer does not
 * read ({@value AnswerBacklog#LIMIT} bytes), past which its READs and atomics wait, parked. The
 * first request it refuses is NAKed and nothing
 * more of the peer's is applied, as an RC responder does.
 */
final class TcpResponder implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final TcpQueuePair qp;
    /** {@code (rnrRetry + 1) x} {@value TcpQueuePair#RNR_TIMER_MS} ms: how long a SEND waits for a receive. */
    private final long rnrBudgetNanos;

    /** Passes of reading per progress call: bounds the time one connection holds the IO thread. */
    private static final int READS_PER_PROGRESS = 16;
    /**
     * Frames of one connection per progress call: with READS_PER_PROGRESS alone, a peer sending
     * header-only frames held the IO thread for 20 000 of them (tens of ms) before the other
     * connections on it had a turn. What is left is taken on the next pass.
     */
    private static final int FRAMES_PER_PROGRESS = 256;
    /** Payload still to come at least this large is read straight into its destination. */
    private static final int DIRECT_READ = 16 * 1024;
    private static final int RX_BUFFER = 64 * 1024;
    // ---- receive side: the progress thread only
    private final Arena arena = Arena.ofShared();
    /** Mapped, not allocated: its pages become resident as bytes arrive (an idle connection's stay untouched). */
    private final MemorySegment rx = LibC.mapAnonymous(RX_BUFFER, arena);
    private int rxStart, rxEnd;
    private boolean inFrame;            // a header was read; its payload may still be coming
    /** Our answers the peer has not read: past its limit, the peer's READs and atomics wait. */
    private final AnswerBacklog answers;
    /** Executes and answers the peer's READs, atomics and FLUSHes. */
    private final TcpOneSided oneSided;
    /** The peer's requests parked behind a SEND that found no receive (RNR), replayed in order. */
    private final ParkedRequests parked = new ParkedRequests(PayloadBudget.process());
    private boolean replaying;
    /**
     * The current frame's header is read but the frame is not taken: parking it would exceed the
     * budget, or too many answers wait to be sent. The stream is not read past it until it is.
     */
    private volatile boolean deferred;   // written by the progress thread; posters read it to set the socket's watch
    private final FrameHeader deferredFrame = new FrameHeader();
    /** The starved frame and its payload's place, set aside while the frames before it go ({@link #goOnWhileStarved}). */
    private final FrameHeader starvedFrame = new FrameHeader();
    private final PayloadLanding starvedPayload = new PayloadLanding();
    /**
     * The current frame's payload is being parked and the process's {@link PayloadBudget} has no
     * room for its next chunk: the stream is not read until it has (see {@link #resumeStarved}).
     */
    private volatile boolean starved;   // written by the progress thread; posters read it to set the socket's watch
    private long starvedSince;
    /** When the current frame's payload last found nothing more to read (0: it is coming). */
    private long quietSince;
    /** The frame being read (or replayed from the parked ones). */
    private final FrameHeader f = new FrameHeader();
    /** Where the current frame's payload goes. */
    private final PayloadLanding payload = new PayloadLanding();
    /** The peer's answers to our requests. */
    private final ResponseFrames responses;
    private volatile long rnrSince;     // when the first parked SEND began waiting for a receive; 0: not waiting
    private boolean refusing;           // we NAKed a request: apply nothing more from the peer
    private long lastRequestSeq;        // the peer's requests received so far (applied or parked)
    /** When the peer's requests are acknowledged. */
    private final AckSchedule acks;
    private final StringBuilder why = new StringBuilder();


    TcpResponder(TcpQueuePair qp, QueuePairSpec spec) {
        this.qp = qp;
        this.rnrBudgetNanos = (spec.rnrRetry() + 1L) * TcpQueuePair.RNR_TIMER_MS * 1_000_000L;
        this.answers = new AnswerBacklog(qp.tx);
        this.acks = new AckSchedule(qp);
        this.oneSided = new TcpOneSided(qp, this, answers);
        this.responses = new ResponseFrames(qp, payload);
    }

    /** When the last RNR_WAIT went (progress thread). */
    private long rnrWaitSent;

    /** The SEND at the head waits for a receive: say so to the peer now and then (see {@link TcpFrameDescriptor#RNR_WAIT}). */
    private void tellWaiting(long now) {
        if (now - rnrWaitSent < TcpQueuePair.RNR_TIMER_MS * 500_000L) {
            return;
        }
        rnrWaitSent = now;
        synchronized (qp.txLock) {
            if (!qp.state.closed()) {
                qp.frameHeader(RNR_WAIT, 0, 0, 0, f.seq, 0, 0, 0, 0, 0);
                qp.finishTransmit();
            }
        }
    }

    /** Whether the stream is read to the end of what came: no frame half read, nothing buffered. */
    boolean idle() {
        return !inFrame && rxStart == rxEnd;
    }

    /**
     * Nothing of the peer's is in progress here and nothing waits: no frame being read, no
     * bytes buffered, nothing parked, no SEND waiting for a receive, the stream not stopped for
     * a budget, no ACK owed. With none of these, only the socket (or a post) brings work.
     */
    boolean atRest() {
        return idle() && parked.isEmpty() && !deferred && !starved && rnrSince == 0 && !acks.owed();
    }

    /** Bytes ever read from the peer's stream (socket or ring): a change says the peer said something. */
    long bytesIn() {
        return bytesIn;
    }

    private long bytesIn;   // the progress thread

    /** Whether a request was refused (NAKed): nothing more is applied, or acknowledged. */
    boolean refusing() {
        return refusing;
    }

    /** Bytes read from the socket so far into the buffer (a change says the stream moved). */
    int buffered() {
        return rxEnd;
    }

    /** Whether the stream is not read now: the current frame is deferred, or its parked payload waits for budget. */
    boolean deferred() {
        return deferred || starved;
    }

    /** A SEND waits for a receive, at the head of the parked ones or deferred: a posted receive should wake the thread. */
    boolean waitsForReceive() {
        return rnrSince != 0 || deferred;
    }

    /** The ACK to put on a frame going back now (0: none owed); under the transmit lock. */
    long piggybackAck() {
        return acks.piggyback();
    }

    /** The connection ends: a payload being placed lets go of its registration. */
    void releasePayload() {
        payload.release();
    }

    @Override
    public void close() {
        releasePayload();
        arena.close();
        parked.close();
    }

    void receive() {
        if (starved && !resumeStarved() && !goOnWhileStarved()) {
            return;
        }
        if (deferred && !retryDeferred()) {
            return;
        }
        if (!inFrame && !parked.isEmpty()) {
            replayParked();
        }
        int frames = 0;
        for (int reads = 0; reads < READS_PER_PROGRESS && frames < FRAMES_PER_PROGRESS && !qp.state.peerGone()
                && !deferred; ) {
            if (inFrame) {
                int buffered = rxEnd - rxStart;
                if (buffered > 0) {
                    int take = (int) Math.min(buffered, payload.left());
                    int taken = place(rx.address() + rxStart, take);
                    rxStart += taken;
                    if (taken < take) {
                        starve();
                        return;
                    }
                    continue;
                }
                long room;
                if (payload.left() >= DIRECT_READ && (room = payload.room()) >= DIRECT_READ && payload.enter()) {
                    long n;
                    try {
                        n = streamRead(payload.dest(), room);
                    } finally {
                        payload.exit();
                    }
                    reads++;
                    if (n <= 0) {
                        if (!readFailed(n)) {
                            payloadQuiet();
                            return;
                        }
                        continue;
                    }
                    payload.advance(n);
                    quietSince = 0;
                    qp.requester.peerAlive();
                    if (payload.left() == 0) {
                        endPayload();
                    }
                    continue;
                }
            } else if (rxEnd - rxStart >= HEADER_SIZE) {
                int at = rxStart;
                rxStart += HEADER_SIZE;
                frames++;
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
                    payloadQuiet();
                    return;
                }
                continue;
            }
            rxEnd += (int) n;
            quietSince = 0;
            qp.requester.peerAlive();
        }
    }

    /**
     * Nothing more came now: when a frame's payload is in progress, it must go on within the
     * {@link PayloadBudget#stallNanos stall deadline}, or the connection ends (a payload that never
     * comes would otherwise hold its frame, and what it parked, for good).
     */
    private void payloadQuiet() {
        if (!inFrame || payload.left() == 0 || qp.state.peerGone()) {
            return;
        }
        long now = System.nanoTime();
        if (quietSince == 0) {
            quietSince = now;
        } else if (now - quietSince > parked.budget().stallNanos()) {
            qp.stalled("the peer sent " + (f.length - payload.left()) + " of the " + f.length + " payload bytes of "
                    + typeName(f.type) + " " + f.seq + ", then nothing for " + (now - quietSince) / 1_000_000 + " ms");
        }
    }

    /**
     * The parked payload found no room in the process's budget: the stream is not read (TCP flow
     * control holds the peer) until a chunk can be drawn, on a later pass.
     */
    private void starve() {
        starved = true;
        starvedSince = System.nanoTime();
        if (!qp.ringMode) {
            qp.watchIn(false);   // the IO thread's passes (every 50 ms at least) try again
        }
    }

    /**
     * Tries to draw the chunk the parked payload waits for; true when it came and the stream may be
     * read on. Waiting past the stall deadline ends the connection, and frees what it parked.
     */
    private boolean resumeStarved() {
        if (qp.state.peerGone()) {
            return false;
        }
        if (payload.room() == 0) {
            long waited = System.nanoTime() - starvedSince;
            if (waited > parked.budget().stallNanos()) {
                qp.stalled(typeName(f.type) + " " + f.seq + " waited " + waited / 1_000_000 + " ms to park the rest of its "
                        + f.length + " payload bytes (" + payload.left() + " to come): the process's "
                        + parked.budget() + " are in use");
            }
            return false;
        }
        starved = false;
        quietSince = 0;
        if (!qp.ringMode) {
            qp.watchIn(true);
        }
        return true;
    }


    /**
     * Starved, the stream unread until the process's budget has room for the next chunk of the
     * frame being parked: the frames parked before it are applied if they can go now (their
     * receives posted), which gives their budget back, and, when none is left before it, the
     * frame itself stops being parked: it is applied as far as its payload came, and the rest
     * lands where it goes as it is read. Without this, connections that each parked part of a
     * frame held the budget between them while each waited for the others' (an application slow
     * to post receives, then posting them, saw both end at the stall deadline). True when the
     * stream may be read on. On the progress thread.
     */
    private boolean goOnWhileStarved() {
        if (qp.state.peerGone() || parked.isEmpty()) {
            return goOnUnparked();
        }
        ParkedRequests.Parked filling = parked.suspendFilling();
        starvedFrame.copyFrom(f);
        starvedPayload.copyFrom(payload);
        inFrame = false;
        int before = parked.size();
        replayParked();
        if (parked.size() < before) {
            starvedSince = System.nanoTime();   // progress: the wait for the budget starts again
        }
        parked.resumeFilling(filling);
        f.copyFrom(starvedFrame);
        payload.copyFrom(starvedPayload);
        inFrame = true;
        return !qp.state.peerGone() && parked.isEmpty() && goOnUnparked();
    }

    /**
     * The frame being parked, with nothing parked before it: applied now if it can be (a SEND's
     * receive is posted; a WRITE lands in its region or is refused), its chunks so far placed and
     * given back, and the stream read on; false (and it stays parked) when it cannot.
     */
    private boolean goOnUnparked() {
        if (qp.state.peerGone() || !parked.isEmpty() || !parked.filling() || (!refusing && holdsAnswer())) {
            return false;
        }
        ParkedRequests.Parked filling = parked.suspendFilling();
        starvedFrame.copyFrom(f);
        starvedPayload.copyFrom(payload);
        long landed = filling.header.length - payload.left();   // what came so far, in the chunks
        load(filling.header);
        replaying = true;   // a SEND without a receive waits (is not parked again)
        boolean go;
        try {
            go = continueFrame();
        } finally {
            replaying = false;
        }
        if (!go || qp.state.peerGone()) {
            parked.resumeFilling(filling);
            f.copyFrom(starvedFrame);
            payload.copyFrom(starvedPayload);
            inFrame = !qp.state.peerGone();
            return false;
        }
        rnrSince = 0;
        for (int i = 0; i < filling.chunks() && landed > 0; i++) {
            int n = (int) Math.min(landed, filling.chunkLength(i));
            place(filling.chunkAddress(i), n);   // the payload is not all here: this ends no frame
            landed -= n;
        }
        parked.unpark(filling);
        starved = false;
        quietSince = 0;
        if (!qp.ringMode) {
            qp.watchIn(true);
        }
        return true;
    }

    /**
     * Reads the peer's frames: from the socket, or in ring mode from the peer's ring (then 0
     * bytes is "nothing now", -EAGAIN, since the socket, not the ring, says when the peer is gone).
     */
    private long streamRead(long address, long length) {
        if (!qp.ringMode) {
            long n = Sockets.recv(qp.fd, address, length);
            if (n > 0) {
                bytesIn += n;
            }
            return n;
        }
        if (qp.rxRing == null && !qp.awaitPeerRing()) {
            return -Errno.EAGAIN;
        }
        long n = qp.rxRing.read(address, length);
        if (n < 0) {
            qp.malformed("the peer's ring positions are impossible");
            return -Errno.EIO;
        }
        if (n > 0) {
            bytesIn += n;
            if (qp.rxRing.producerWaits()) {
                qp.doorbell();
            }
        }
        return n == 0 ? -Errno.EAGAIN : n;
    }


    /** A recv returned {@code n} <= 0: true to go on reading, false when there is nothing now. */
    private boolean readFailed(long n) {
        if (n == 0) {
            qp.gone("the peer closed the connection");
            return false;
        }
        int errno = (int) -n;
        if (errno == Errno.EAGAIN || errno == Errno.EINTR) {
            return false;
        }
        qp.gone("receiving failed: " + Errno.name(errno) + " (" + Errno.describe(errno) + ")");
        return false;
    }


    /** Copies {@code count} buffered payload bytes to where they go (or drops them): how many were taken (see {@link PayloadLanding#place}). */
    private int place(long from, int count) {
        int taken = payload.place(from, count);
        if (payload.left() == 0) {
            endPayload();
        }
        return taken;
    }


    private void beginFrame(int at) {
        f.decode(rx, at);
        inFrame = true;
        quietSince = 0;
        payload.reset();
        if (f.length < 0 || (f.length > 0 && f.type != SEND && f.type != WRITE && f.type != READ_RESPONSE)) {
            qp.malformed("a " + typeName(f.type) + " frame claims " + f.length + " payload bytes");
            return;
        }
        if (f.type < ACK) {
            if (f.seq != lastRequestSeq + 1) {
                qp.malformed("request " + f.seq + " arrived after request " + lastRequestSeq + " (out of order)");
                return;
            }
            lastRequestSeq = f.seq;   // received: counted here, whether it is applied now or parked
        }
        if ((f.flags & FLAG_ACK_PIGGYBACK) != 0 && f.type != COMPARE_SWAP) {
            qp.requester.retire(f.swap, true);
            if (qp.state.peerGone()) {
                return;
            }
        }
        dispatch();
    }

    /**
     * A READ or atomic while more than {@link AnswerBacklog#LIMIT} of our answers wait for the peer
     * to read them: it is parked (its header only), with the requests after it, and answered when
     * the peer has read; meanwhile the peer's stream is read on, so its answers to our requests
     * keep coming (two honest peers reading from each other never wait on each other).
     */
    private boolean holdsAnswer() {
        if ((f.type != READ_REQUEST && f.type != COMPARE_SWAP && f.type != FETCH_ADD) || !answers.over()) {
            return false;
        }
        String stalled = answers.stalled();
        if (stalled != null) {
            qp.failConnection(stalled);   // slow, not hostile: no offence against its address
        }
        return true;
    }


    /** Takes the current frame: parks it behind parked ones, or applies it (or starts its payload). */
    private void dispatch() {
        if (f.type < ACK && !refusing && (!parked.isEmpty() || holdsAnswer())) {
            if (!park()) {
                return;   // requests after a parked one wait behind it, in order; no room: deferred
            }
        } else if (!continueFrame()) {
            return;   // the connection ended (protocol error, the peer gone), or the frame was deferred
        }
        if (payload.left() == 0) {
            endPayload();
        }
    }


    /** The current frame waits, unread past its header, and so does the stream (see {@link #deferred}). */
    private void defer() {
        if (!deferred) {
            deferred = true;
            deferredFrame.copyFrom(f);   // replaying parked frames meanwhile reuses the current frame
            if (!qp.ringMode) {
                qp.watchIn(false);   // a receive posted (postRecv) or the socket taking our answers wakes the thread
            }
        }
    }


    /** Tries the deferred frame again; true when it was taken and the stream may be read on. */
    private boolean retryDeferred() {
        if (!parked.isEmpty()) {
            replayParked();
        }
        if (qp.state.peerGone()) {
            return false;
        }
        deferred = false;
        load(deferredFrame);
        dispatch();
        if (deferred) {
            return false;
        }
        if (!qp.ringMode && !qp.state.peerGone()) {
            qp.watchIn(true);
        }
        return true;
    }


    /**
     * Parks the current request: its payload goes into a buffer of its own, and it is applied
     * later, in order. False when that would exceed the budget ({@link ParkedRequests#BUDGET}, or
     * the process's {@link PayloadBudget} has not the frame's record left): then nothing is
     * allocated and the frame is {@link #defer deferred}; or when the peer has more
     * READs and atomics waiting than it was granted: then the connection ends.
     */
    private boolean park() {
        int granted = Math.max(1, qp.granted.responderResources());   // a requester keeps one in flight at least
        if ((f.type == READ_REQUEST || f.type == COMPARE_SWAP || f.type == FETCH_ADD)
                && parked.readsAndAtomics() >= granted) {
            // An honest requester has no more in flight than our responder resources (it holds
            // the rest until answers come, as max_rd_atomic does), and each parked one is unanswered.
            qp.malformed("more than the " + granted + " READs and atomics the handshake granted are waiting for answers");
            return false;
        }
        if (!parked.fits(f.length) || !parked.park(f)) {
            defer();
            return false;
        }
        payload.intoParked(parked, f.length);
        return true;
    }


    /** Makes {@code h} the current frame, its payload not started. */
    private void load(FrameHeader h) {
        f.copyFrom(h);
        inFrame = true;
        quietSince = 0;
        payload.reset();
    }


    /** Applies parked requests in order, as far as receives are posted for the SENDs among them. */
    private void replayParked() {
        for (int n = 0; n < FRAMES_PER_PROGRESS && !parked.isEmpty() && !qp.state.peerGone(); n++) {
            ParkedRequests.Parked p = parked.first();
            load(p.header);
            if (!refusing && holdsAnswer()) {
                inFrame = false;
                return;   // the peer has not read our answers yet: it waits (the stream is read on)
            }
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
            if (payload.left() > 0) {
                for (int i = 0; i < p.chunks(); i++) {
                    place(p.chunkAddress(i), p.chunkLength(i));   // the last ends the frame
                }
            } else {
                endPayload();
            }
            parked.removeFirst();
        }
    }


    /**
     * Decides where the current frame's payload goes and applies what has no payload. Returns
     * false while a SEND waits for a receive (the frame stays current), or when the connection ended.
     */
    private boolean continueFrame() {
        if (qp.state.peerGone()) {
            return false;
        }
        if (f.isRequest()) {
            return continueRequest();
        }
        return switch (f.type) {
            case ACK, NAK, READ_RESPONSE, ATOMIC_RESPONSE, RNR_WAIT -> responses.take(f);
            default -> qp.onControlFrame(f);   // DISCONNECT, the same-host MAP and UNMAP frames, or a lie
        };
    }

    /** A request of the peer's: applied, refused, or (a SEND without a receive) parked or waiting. */
    private boolean continueRequest() {
        if (qp.state.inError() && !refusing) {
            // An RC QP in error answers nothing and its peer's request times out; say so at once.
            refuse(WorkCompletion.RETRY_EXC_ERR, typeName(f.type), "this side's queue pair is in error");
        }
        if (refusing) {
            payload.drop(f.type == SEND || f.type == WRITE ? f.length : 0);
            return true;
        }
        switch (f.type) {
            case SEND -> {
                return takeReceive(false);
            }
            case WRITE -> {
                return continueWrite();
            }
            case READ_REQUEST -> oneSided.read(f);
            case COMPARE_SWAP, FETCH_ADD -> oneSided.atomic(f);
            default -> oneSided.flush(f);
        }
        return true;
    }

    /** A WRITE (with an immediate: it takes a receive too) lands in the registration its key names, if it grants it. */
    private boolean continueWrite() {
        if (f.has(FLAG_IMM)) {
            if (!takeReceive(true)) {
                return false;
            }
            if (parked.filling()) {
                return true;   // parked until a receive is posted for its immediate
            }
        }
        if (f.length > 0) {
            why.setLength(0);
            TcpMemoryRegistration r = qp.registrations.checkFrom(qp.scope, f.rkey, f.addr, f.length, AccessFlags.REMOTE_WRITE, why);
            if (r == null || r.isClosed()) {
                refuse(WorkCompletion.REM_ACCESS_ERR, "WRITE", r == null ? why : "the region was closed");
                payload.drop(f.length);
                return true;
            }
            payload.into(r, f.addr, f.length);
        }
        return true;
    }

    /** The frame (and its payload) is done: complete what it completes. */
    private void endPayload() {
        qp.cq.served++;   // a pass that ends a frame did work, even when it completes nothing here
        boolean revoked = payload.end();
        inFrame = false;
        if (parked.filling()) {
            parked.filled();   // read whole; applied in order by replayParked
            return;
        }
        if (qp.state.peerGone()) {
            return;
        }
        switch (f.type) {
            case SEND, WRITE -> {
                if (revoked && f.type == WRITE && !refusing) {
                    // On verbs the rest of a write into a deregistered region fails at the target.
                    refuse(WorkCompletion.REM_ACCESS_ERR, "WRITE", "the region was closed while the write landed");
                }
                if (!refusing) {
                    if ((f.type == SEND || (f.flags & FLAG_IMM) != 0) && qp.rq.holds()) {
                        // (An empty queue: the QP went to error while the payload landed, and flushed the receive.)
                        qp.cq.add(qp.rq.take(), revoked ? WorkCompletion.LOC_PROT_ERR : WorkCompletion.SUCCESS,
                                f.type == SEND ? WorkCompletion.OP_RECV : WorkCompletion.OP_RECV_RDMA_WITH_IMM, f.length,
                                f.imm, (f.flags & FLAG_IMM) != 0);
                    }
                    if ((f.flags & FLAG_ACK_REQUESTED) != 0) {
                        acks.owe(f.seq);
                    }
                }
            }
            case READ_RESPONSE, ATOMIC_RESPONSE -> qp.requester.retire(f.seq, true);
            case FLUSH -> {
                if (!refusing) {
                    acks.owe(f.seq);
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
        if (!qp.rq.claim()) {
            long now = System.nanoTime();
            if (rnrSince == 0) {
                rnrSince = now;
            }
            if (!replaying && parked.isEmpty() && park()) {
                // Parked (and, in order, every request after it): the stream is read on.
                return true;
            }
            if (now - rnrSince < rnrBudgetNanos) {
                tellWaiting(now);
                return false;   // waits at the head of the parked ones, or deferred
            }
            rnrSince = 0;
            refuse(WorkCompletion.RNR_RETRY_EXC_ERR, forImm ? "WRITE_WITH_IMM" : "SEND",
                    "no receive was posted within " + rnrBudgetNanos / 1_000_000 + " ms");
            payload.drop(f.length);
            return true;
        }
        rnrSince = 0;   // a receive was there: the next SEND that finds none has a budget of its own
        if (forImm) {
            return true;   // the receive is consumed when the write completes
        }
        if (f.length > qp.rq.length()) {
            // RC: the receiver's WR completes with LOC_LEN_ERR, the sender's with REM_INV_REQ_ERR.
            int room = qp.rq.length();
            qp.cq.add(qp.rq.take(), WorkCompletion.LOC_LEN_ERR, WorkCompletion.OP_RECV, f.length, 0, false);
            refuse(WorkCompletion.REM_INV_REQ_ERR, "SEND", f.length + " bytes exceed the receive buffer of "
                    + room);
            payload.drop(f.length);
            return true;
        }
        TcpMemoryRegistration r = f.length == 0 ? null : qp.registrations.lookup(qp.rq.lkey());
        if (r != null) {
            payload.into(r, qp.rq.address(), f.length);
        } else {
            payload.drop(f.length);
        }
        return true;
    }


    /** After a pass of reading: an ACK owed goes now or rides on the next frame (see {@link AckSchedule}). */
    void sendAck() {
        acks.afterPass();
    }

    /** Sends an ACK owed now, if any (before the IO thread sleeps). */
    void flushAck() {
        acks.flush();
    }

    /** A keep-alive (an ACK of what was acknowledged already); under the transmit lock. */
    void keepAlive() {
        acks.keepAlive();
    }


    /** Refuses the current request: NAK it, and apply nothing more from the peer (RC: the connection ends). */
    void refuse(int status, String what, CharSequence reason) {
        LOG.log(System.Logger.Level.DEBUG, "tcp QP {0}: refused {1} {2}: {3} ({4})", qp.qpNum, what, f.seq, reason,
                WorkCompletion.statusName(status));
        refusing = true;
        if (status == WorkCompletion.REM_ACCESS_ERR && !qp.registrations.everIssued(f.rkey)) {
            // A stale key (an honest race with a close, a lease that ran out) is no offence; a key
            // this device never issued was guessed.
            qp.offended(what + " with key 0x" + Integer.toHexString(f.rkey) + ", which was never issued");
        }
        synchronized (qp.txLock) {
            acks.beforeNak(f.seq);
            qp.frameHeader(NAK, 0, status, 0, f.seq, 0, 0, 0, 0, 0);
            qp.finishTransmit();
        }
    }
}
