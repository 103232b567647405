package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;
import static dev.jrdma.spi.QueuePair.*;

import dev.jrdma.os.Errno;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.WorkCompletion;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The requester side of a tcp queue pair: the send queue. Posting threads (serialised by the
 * owner, and against the progress thread by the queue pair's transmit lock) record each request
 * in the ring and send its frame, or, to a peer of this host whose region is mapped here, do it
 * directly on the mapping; the progress thread retires the ring in order as the peer's ACKs,
 * NAKs and responses come back ({@link #retire}, {@link #failHead}), and completes what needed
 * no answer ({@link #completeReady}).
 *
 * <p>RC's order holds across the two paths: a request that could go directly while earlier
 * ones are still in the stream is held ({@link #hold}), with every later one, until the stream
 * has drained up to it ({@link #issueHeld}).
 */
final class TcpRequester {
    private static final VarHandle SQ_TAIL, SQ_HEAD;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SQ_TAIL = l.findVarHandle(TcpRequester.class, "sqTail", long.class);
            SQ_HEAD = l.findVarHandle(TcpRequester.class, "sqHead", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final TcpQueuePair qp;

    // ---- send ring: requests posted and not completed. Posters (serialised by the caller) write
    // entries and then publish sqTail; the progress thread completes from sqHead. The entry of
    // sequence number s is at (s - 1) & sqMask.
    private final int sqMask;
    private final long[] sqWrId, sqLocalAddr;
    private final int[] sqLength, sqLkey;
    private final byte[] sqOpcode;
    private final boolean[] sqSignaled;
    private final int[] sqLocalError;
    private volatile long sqTail;   // ring positions 1..sqTail posted
    private volatile long sqHead;   // 1..sqHead completed
    private final long[] sqWire;    // the entry's sequence number on the wire; 0: not sent (done directly, or not at all)
    // What a held entry needs to be issued later (see issueHeld)
    private final long[] sqRemote, sqCompareAdd, sqSwap;
    private final int[] sqRkey, sqImm;
    private final boolean[] sqHeld;
    private boolean switching;      // poster: entries are held until the stream drains (under the transmit lock)
    private long wireNext;          // poster: the last sequence number sent (under the transmit lock)
    private volatile long wirePosted;   // wireNext, published for the progress thread
    private long lastSocketPos;     // poster: ring position of the last request sent on the socket

    private volatile boolean sqBroken;   // poster side: a local error was posted; nothing more goes out
    // ---- staged chain (postStaged)
    private final long[][] staged;
    private int firstUnposted;


    /** When the head's answer is overdue (a silent peer). */
    private final AnswerTimer answerTimer;

    TcpRequester(TcpQueuePair qp, int sendDepth, int retryCount, int ackTimeout) {
        this.qp = qp;
        this.answerTimer = new AnswerTimer(retryCount, ackTimeout);
        int sq = Integer.highestOneBit(Math.max(1, sendDepth - 1)) << 1;
        sqMask = sq - 1;
        sqWrId = new long[sq];
        sqLocalAddr = new long[sq];
        sqLength = new int[sq];
        sqLkey = new int[sq];
        sqOpcode = new byte[sq];
        sqSignaled = new boolean[sq];
        sqLocalError = new int[sq];
        sqWire = new long[sq];
        sqRemote = new long[sq];
        sqCompareAdd = new long[sq];
        sqSwap = new long[sq];
        sqRkey = new int[sq];
        sqImm = new int[sq];
        sqHeld = new boolean[sq];
        staged = new long[sq][];
    }

    int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                        int rkey, long compareAdd, long swap, int imm) {
        synchronized (qp.txLock) {
            int rc = queue(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
            qp.finishTransmit();
            return rc;
        }
    }


    /**
     * {@link dev.jrdma.spi.QueuePair#postNow}: a WRITE or READ done directly on the peer's mapped
     * region when nothing of ours is ahead of it in the stream (the condition of {@link #queue}'s
     * direct path), without the transmit lock: the caller is the one thread that posts and runs
     * progress, so nothing read here changes under it. A signaled one takes its entry, and
     * {@link #completeReady} reports it.
     */
    int postNow(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey) {
        SameHostPeer peer = qp.sameHost;
        long pos = sqTail + 1;
        if (peer == null || length <= 0 || switching || sqBroken || sqHead < lastSocketPos || qp.state.inError()
                || pos - sqHead > sqMask + 1 || pos - sqHead > qp.granted.sendDepth()
                || (opcode != WR_RDMA_WRITE && opcode != WR_RDMA_READ)) {
            return NOT_NOW;
        }
        SameHostPeer.PeerRegion m = peer.region(rkey);
        if (m == null || qp.registrations.check(lkey, localAddr, length, localAccess(opcode), null) == null
                || SameHostPeer.direct(m, opcode == WR_RDMA_WRITE ? WRITE : READ_REQUEST, localAddr, length,
                remoteAddr, 0, 0) != 0) {
            return NOT_NOW;
        }
        if ((flags & SEND_SIGNALED) == 0) {
            return DONE;
        }
        int i = (int) (pos - 1) & sqMask;
        sqWrId[i] = wrId;
        sqOpcode[i] = (byte) opcode;
        sqSignaled[i] = true;
        sqLength[i] = length;
        sqLocalError[i] = 0;
        sqWire[i] = 0;
        sqHeld[i] = false;
        SQ_TAIL.setRelease(this, pos);
        qp.cq.wakeIfAsleep();
        return 0;
    }

    int chainCapacity() {
        return sqMask + 1;
    }


    void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey,
                      long remoteAddr, int rkey, long compareAdd, long swap, int imm) {
        long[] s = staged[index];
        if (s == null) {
            s = staged[index] = new long[11];
        }
        s[0] = wrId;
        s[1] = opcode;
        s[2] = flags;
        s[3] = localAddr;
        s[4] = length;
        s[5] = lkey;
        s[6] = remoteAddr;
        s[7] = rkey;
        s[8] = compareAdd;
        s[9] = swap;
        s[10] = imm;
    }


    int postStaged(int count) {
        synchronized (qp.txLock) {
            for (int i = 0; i < count; i++) {
                long[] s = staged[i];
                int rc = queue(s[0], (int) s[1], (int) s[2], s[3], (int) s[4], (int) s[5], s[6], (int) s[7], s[8], s[9],
                        (int) s[10]);
                // A member done at once (direct, unsignaled) is posted as far as the chain goes: the
                // last member's completion reports it with the rest.
                if (rc != 0 && rc != DONE) {
                    firstUnposted = i;
                    qp.finishTransmit();
                    return rc;
                }
                if (qp.tx.full()) {
                    qp.tx.flush();
                }
            }
            qp.finishTransmit();
            return 0;
        }
    }


    int firstUnposted() {
        return firstUnposted;
    }


    /** Records one request in the send ring and queues its frame (or does it directly); under the transmit lock. */
    private int queue(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                      int rkey, long compareAdd, long swap, int imm) {
        if (qp.state.closed()) {
            return Errno.EINVAL;
        }
        long pos = sqTail + 1;
        if (pos - sqHead > sqMask + 1 || pos - sqHead > qp.granted.sendDepth()) {
            return Errno.ENOMEM;
        }
        if ((opcode < WR_RDMA_WRITE || opcode > WR_ATOMIC_FETCH_AND_ADD) && opcode != WR_FLUSH) {
            return Errno.EINVAL;
        }
        byte type = frameType(opcode);
        int needLocal = localAccess(opcode);
        boolean atomic = type == COMPARE_SWAP || type == FETCH_ADD;
        if (atomic && length < 8) {
            return Errno.EINVAL;
        }
        int i = (int) (pos - 1) & sqMask;
        sqWrId[i] = wrId;
        sqOpcode[i] = (byte) opcode;
        sqSignaled[i] = (flags & SEND_SIGNALED) != 0;
        sqLocalAddr[i] = localAddr;
        sqLength[i] = atomic ? 8 : length;
        sqLkey[i] = lkey;
        sqWire[i] = 0;
        TcpMemoryRegistration local = length == 0 ? null
                : qp.registrations.check(lkey, localAddr, atomic ? 8 : length, needLocal, null);
        sqLocalError[i] = length != 0 && local == null ? WorkCompletion.LOC_PROT_ERR : 0;
        if (sqLocalError[i] != 0 || sqBroken || qp.state.inError()) {
            return notSent(pos);   // RC: the bad request and everything after it complete in error
        }
        sqRemote[i] = remoteAddr;
        sqRkey[i] = rkey;
        sqCompareAdd[i] = compareAdd;
        sqSwap[i] = swap;
        sqImm[i] = imm;
        if (switching) {
            return hold(pos);   // behind a switch of path: issued in order once the stream drains
        }
        SameHostPeer peer = qp.sameHost;
        if (peer != null && directKind(i)) {
            SameHostPeer.PeerRegion m = peer.region(rkey);
            if (m == null) {
                requestMap(peer, rkey);
            } else if (sqHead >= lastSocketPos) {
                // Nothing of ours is still in the stream ahead of it, so doing it now keeps RC's order.
                int status = SameHostPeer.direct(m, type, localAddr, atomic ? 8 : length, remoteAddr, compareAdd, swap);
                if (status != 0) {
                    sqLocalError[i] = status;
                    return notSent(pos);
                }
                if ((flags & SEND_SIGNALED) == 0) {
                    return DONE;   // done, and nothing is to report it: it takes no entry (sqTail stays)
                }
                SQ_TAIL.setRelease(this, pos);   // the fence, when one is needed, is wakeIfAsleep's
                qp.cq.wakeIfAsleep();
                return 0;
            } else {
                // Mapped, but earlier requests are still in the stream: this one, and every later
                // one, waits until they are done, then goes (directly) in order. Sending it through
                // the stream instead would keep a busy connection off the direct path for good.
                switching = true;
                return hold(pos);
            }
        }
        if (awaitsAnswers(opcode, length)) {
            switching = true;   // held, with all after it, until READs or atomics in flight are answered
            return hold(pos);
        }
        return stream(i, pos, local);
    }

    /**
     * The READ bytes this side may have in flight at the peer ({@value}): what it asks for, the
     * peer must answer, and a peer holds answers only up to {@link AnswerBacklog#LIMIT}
     * before it parks further READs. Staying under that, two honest peers reading from each other
     * never make each other wait (as max_rd_atomic bounds a verbs requester). One READ larger
     * than this goes alone.
     */
    static final long READ_CREDIT = AnswerBacklog.LIMIT / 2;
    private long readBytesIssued;              // under the transmit lock
    private volatile long readBytesRetired;    // the progress thread

    /**
     * READs and atomics this side may have in flight at the peer, as max_rd_atomic bounds a verbs
     * requester: the smaller of our initiator depth and the responder resources the peer's
     * handshake announced (its max_dest_rd_atomic; more is a protocol error there). Set at start.
     */
    private int rdAtomicLimit = Integer.MAX_VALUE;
    private long rdAtomicIssued;               // under the transmit lock
    private volatile long rdAtomicRetired;     // the progress thread

    /** The handshake is done: the peer takes at most {@code peerResponderResources} READs and atomics at once. */
    void limitReadsAndAtomics(int peerResponderResources) {
        rdAtomicLimit = Math.max(1, Math.min(qp.granted.initiatorDepth(), peerResponderResources));
    }

    /**
     * Whether a request must wait for answers to those in flight: a READ or atomic past the
     * count limit, or a READ of {@code length} more bytes past the credit; under the lock.
     */
    private boolean awaitsAnswers(int opcode, long length) {
        if (opcode != WR_RDMA_READ && opcode != WR_ATOMIC_CMP_AND_SWP && opcode != WR_ATOMIC_FETCH_AND_ADD) {
            return false;
        }
        if (rdAtomicIssued - rdAtomicRetired >= rdAtomicLimit) {
            return true;
        }
        long inFlight = readBytesIssued - readBytesRetired;
        return opcode == WR_RDMA_READ && inFlight > 0 && inFlight + length > READ_CREDIT;
    }


    /** Entry {@code i}, sent through the stream, is answered: its READ bytes and READ/atomic count are free again. */
    private void retiredOnWire(int i) {
        int op = sqOpcode[i];
        if (op == WR_RDMA_READ) {
            readBytesRetired += sqLength[i];
        }
        if (op == WR_RDMA_READ || op == WR_ATOMIC_CMP_AND_SWP || op == WR_ATOMIC_FETCH_AND_ADD) {
            rdAtomicRetired++;
        }
    }

    /** Whether entry {@code i} may be done directly on a mapping (a one-sided operation with data). */
    private boolean directKind(int i) {
        int op = sqOpcode[i];
        return sqLength[i] > 0 && (op == WR_RDMA_WRITE || op == WR_RDMA_READ || op == WR_ATOMIC_CMP_AND_SWP
                || op == WR_ATOMIC_FETCH_AND_ADD);
    }


    private static byte frameType(int opcode) {
        return switch (opcode) {
            case WR_SEND, WR_SEND_WITH_IMM -> SEND;
            case WR_RDMA_WRITE, WR_RDMA_WRITE_WITH_IMM -> WRITE;
            case WR_RDMA_READ -> READ_REQUEST;
            case WR_ATOMIC_CMP_AND_SWP -> COMPARE_SWAP;
            case WR_ATOMIC_FETCH_AND_ADD -> FETCH_ADD;
            default -> FLUSH;
        };
    }


    /** The access the local buffer of {@code opcode} needs: reads and atomics land in it. */
    private static int localAccess(int opcode) {
        return opcode == WR_RDMA_READ || opcode == WR_ATOMIC_CMP_AND_SWP || opcode == WR_ATOMIC_FETCH_AND_ADD
                ? AccessFlags.LOCAL_WRITE : 0;
    }


    /** Entry at {@code pos} is recorded but not issued yet; under the transmit lock. */
    private int hold(long pos) {
        sqHeld[(int) (pos - 1) & sqMask] = true;
        SQ_TAIL.setRelease(this, pos);
        qp.cq.wakeIfAsleep();
        return 0;
    }


    /** Sends entry {@code i} (at ring position {@code pos}) through the stream; under the transmit lock. */
    private int stream(int i, long pos, TcpMemoryRegistration local) {
        int opcode = sqOpcode[i];
        byte type = frameType(opcode);
        int length = sqLength[i];
        boolean payload = type == SEND || type == WRITE;
        if (payload && length > 0 && !local.enter()) {
            sqLocalError[i] = WorkCompletion.LOC_PROT_ERR;   // closed just now
            return notSent(pos);
        }
        long wire = ++wireNext;
        sqWire[i] = wire;
        if (opcode == WR_RDMA_READ) {
            readBytesIssued += length;
        }
        if (type == READ_REQUEST || type == COMPARE_SWAP || type == FETCH_ADD) {
            rdAtomicIssued++;
        }
        wirePosted = wire;
        lastSocketPos = pos;
        // Every request asks for its ACK, signaled or not: an unanswered one is how a silent
        // peer is found (checkLiveness), and acks are cumulative and ride on frames going back.
        int frameFlags = FLAG_ACK_REQUESTED
                | (opcode == WR_SEND_WITH_IMM || opcode == WR_RDMA_WRITE_WITH_IMM ? FLAG_IMM : 0);
        if (type == FLUSH) {
            // The range's length rides in compare/add, persistence in imm (swap carries ACKs).
            qp.frameHeader(type, frameFlags | FLAG_ACK_REQUESTED, 0, 0, wire, sqRemote[i], sqRkey[i], (int) sqCompareAdd[i],
                    sqSwap[i], 0);
        } else {
            qp.frameHeader(type, frameFlags, 0, payload ? length : 0, wire, sqRemote[i], sqRkey[i], sqImm[i],
                    type == READ_REQUEST ? length : sqCompareAdd[i], sqSwap[i]);
        }
        if (payload && length > 0) {
            qp.tx.addPayload(sqLocalAddr[i], length, local, false);
        }
        if (pos > sqTail) {
            sqTail = pos;   // published before the frame can be answered
        }
        return 0;
    }


    /**
     * The stream has drained up to the first held entry: issue the held ones in order, each
     * directly when its region is mapped, else through the stream. On the progress thread.
     */
    void issueHeld() {
        synchronized (qp.txLock) {
            long tail = sqTail;
            for (long pos = sqHead + 1; pos <= tail; pos++) {
                int i = (int) (pos - 1) & sqMask;
                if (!sqHeld[i]) {
                    continue;
                }
                if (!sqBroken && !qp.state.inError() && awaitsAnswers(sqOpcode[i], sqLength[i])) {
                    qp.finishTransmit();
                    return;   // this and the held ones after it wait for READ answers (switching stays on)
                }
                sqHeld[i] = false;
                if (sqBroken || qp.state.inError()) {
                    if (sqLocalError[i] == 0) {
                        sqLocalError[i] = WorkCompletion.WR_FLUSH_ERR;
                    }
                    continue;
                }
                int length = sqLength[i];
                int op = sqOpcode[i];
                TcpMemoryRegistration local = length == 0 ? null
                        : qp.registrations.check(sqLkey[i], sqLocalAddr[i], length, localAccess(op), null);
                if (length != 0 && local == null) {
                    sqLocalError[i] = WorkCompletion.LOC_PROT_ERR;
                    sqBroken = true;
                    continue;
                }
                SameHostPeer peer = qp.sameHost;
                SameHostPeer.PeerRegion m = peer != null && directKind(i) ? peer.region(sqRkey[i]) : null;
                if (m != null && sqHead >= lastSocketPos) {
                    int status = SameHostPeer.direct(m, frameType(op), sqLocalAddr[i], length, sqRemote[i],
                            sqCompareAdd[i], sqSwap[i]);
                    if (status != 0) {
                        sqLocalError[i] = status;
                        sqBroken = true;
                    }
                } else {
                    stream(i, pos, local);
                }
            }
            switching = false;
            qp.finishTransmit();
        }
    }


    /** An entry that does not go out: it (or one before it) failed here; the QP goes to error. */
    private int notSent(long pos) {
        int i = (int) (pos - 1) & sqMask;
        if (sqLocalError[i] == 0) {
            sqLocalError[i] = WorkCompletion.WR_FLUSH_ERR;   // behind a failed one
        }
        sqBroken = true;
        sqTail = pos;
        qp.cq.wake();
        return 0;
    }


    /** Asks the peer where its region {@code rkey} lives, once; meanwhile operations on it use the socket. */
    private void requestMap(SameHostPeer peer, int rkey) {
        if (peer.shouldAsk(rkey)) {
            qp.frameHeader(MAP_REQUEST, 0, 0, 0, 0, 0, rkey, 0, 0, 0);
        }
    }


    /** After {@link #retire}{@code (seq - 1)}: whether the next outstanding request is {@code seq}, a {@code opcode}. */
    boolean headIs(long seq, int opcode) {
        if (sqHead >= sqTail) {
            return false;
        }
        int i = (int) sqHead & sqMask;
        return sqWire[i] == seq && sqOpcode[i] == opcode;
    }


    /**
     * Completes, in order, every request sent up to sequence number {@code seq} as successful
     * (and the direct ones among them); reads and atomics normally by their own response.
     */
    void retire(long seq, boolean success) {
        if (seq > wirePosted) {
            qp.malformed("a response for request " + seq + ", but only " + wirePosted + " were sent");
            return;
        }
        long tail = sqTail;
        while (sqHead < tail) {
            int i = (int) sqHead & sqMask;
            if (sqLocalError[i] != 0 || sqHeld[i] || sqWire[i] > seq) {
                break;
            }
            sqHead = sqHead + 1;
            if (sqWire[i] != 0) {
                retiredOnWire(i);
            }
            if (success) {
                complete(i);
            }
        }
    }


    /** The peer refused request {@code seq}: it fails with {@code status}; the QP goes to error. */
    void failHead(long seq, int status) {
        if (sqHead >= sqTail || sqWire[(int) sqHead & sqMask] != seq) {
            qp.malformed("a NAK for request " + seq + ", which is not the next outstanding one");
            return;
        }
        int i = (int) sqHead & sqMask;
        sqHead = sqHead + 1;
        qp.cq.add(sqWrId[i], status, WorkCompletion.opcodeOf(sqOpcode[i]), 0, 0, false);
        qp.enterError();
    }


    /**
     * Completes, in order, what needs no answer from the peer: operations done directly on a
     * mapping, and a request that failed here (which puts the QP in error).
     */
    /** Nothing posted is outstanding: every entry completed (or none was posted). Any thread. */
    boolean idle() {
        return sqHead >= sqTail;
    }

    void completeReady() {
        long tail = sqTail;
        while (sqHead < tail && !qp.state.inError()) {
            int i = (int) sqHead & sqMask;
            if (sqLocalError[i] != 0) {
                sqHead = sqHead + 1;
                qp.cq.add(sqWrId[i], sqLocalError[i], WorkCompletion.opcodeOf(sqOpcode[i]), 0, 0, false);
                qp.enterError();
                return;
            }
            if (sqHeld[i]) {
                issueHeld();   // everything before it is done: issue it and those after it
                continue;
            }
            if (sqWire[i] != 0) {
                checkLiveness();
                return;   // its answer is still to come
            }
            // Release, not volatile: only this thread writes sqHead, and posters reading a value
            // a moment old only see less room (a fence per completion is not worth that moment).
            SQ_HEAD.setRelease(this, sqHead + 1);
            complete(i);
        }
    }


    private void complete(int i) {
        if (sqSignaled[i]) {
            int op = sqOpcode[i];
            qp.cq.add(sqWrId[i], WorkCompletion.SUCCESS, WorkCompletion.opcodeOf(op),
                    op == WR_ATOMIC_CMP_AND_SWP || op == WR_ATOMIC_FETCH_AND_ADD ? 8 : sqLength[i], 0, false);
        }
    }


    /** The head request is on the wire, waiting for its answer: fail it (and the connection) if it is overdue. */
    private void checkLiveness() {
        if (!answerTimer.due(sqHead)
                || !answerTimer.expired(sqHead, qp.tx.backlogBytes() > 0 || qp.responderDeferred())) {
            return;
        }
        int i = (int) sqHead & sqMask;
        long seq = sqWire[i];
        sqHead = sqHead + 1;
        qp.cq.add(sqWrId[i], WorkCompletion.RETRY_EXC_ERR, WorkCompletion.opcodeOf(sqOpcode[i]), 0, 0, false);
        qp.enterError();
        qp.peerSilent("request " + seq + " was not answered within " + answerTimer.budgetNanos() / 1_000_000
                + " ms ((retryCount + 1) x the ack timeout)");
    }

    /** Bytes came from the peer: it is alive, so the head's answer timer starts again at the next look. */
    void peerAlive() {
        answerTimer.peerAlive();
    }

    /**
     * The peer's SEND {@code seq} waits for a receive there (RNR): everything before it is
     * acknowledged, and the peer is alive, so the answer timer of the head starts again.
     */
    void peerWaits(long seq) {
        retire(seq - 1, true);
        if (sqHead < sqTail && sqWire[(int) sqHead & sqMask] == seq) {
            answerTimer.restart(sqHead);
        }
    }

    /** The oldest request not completed: its local buffer, length and key (a READ or atomic answered now). */
    long headLocalAddress() {
        return sqLocalAddr[(int) sqHead & sqMask];
    }

    int headLength() {
        return sqLength[(int) sqHead & sqMask];
    }

    int headLkey() {
        return sqLkey[(int) sqHead & sqMask];
    }

    /** The QP went to error: every request outstanding completes, flushed (or with its own local error). */
    void flush() {
        long tail = sqTail;
        while (sqHead < tail) {
            int i = (int) sqHead & sqMask;
            sqHead = sqHead + 1;
            qp.cq.add(sqWrId[i], sqLocalError[i] != 0 ? sqLocalError[i] : WorkCompletion.WR_FLUSH_ERR,
                    WorkCompletion.opcodeOf(sqOpcode[i]), 0, 0, false);
        }
    }
}
