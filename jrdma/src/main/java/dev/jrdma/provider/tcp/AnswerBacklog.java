package dev.jrdma.provider.tcp;

/**
 * Our answers (READ and atomic responses) to one peer that it has not read yet, counted exactly:
 * each answer is kept as its [start, end) position in the bytes ever queued on the transmit side,
 * oldest first, so our own requests' payloads queued between answers are not counted against the
 * peer. Past {@link #LIMIT} the responder parks the peer's READs and atomics (headers only) until
 * the peer reads; a peer that reads nothing for {@link #STALL_NANOS} while over it is taken for one
 * that never reads, and its connection ends. Progress thread; {@link #queued} under the transmit lock.
 */
final class AnswerBacklog {
    /** Our answers waiting for the peer to read them, beyond which its READs and atomics wait. */
    static final long LIMIT = 16L << 20;
    /**
     * How long the answers may sit over {@link #LIMIT} with the socket taking nothing before the
     * peer is taken for one that does not read. Honest peers never get there: a requester keeps
     * at most {@link TcpRequester#READ_CREDIT} of READs in flight, half of it.
     */
    static final long STALL_NANOS = 1_000_000_000L;
    /** Answers tracked one by one; more waiting than this counts as over the limit. */
    static final int RING = 1 << 14;
    /**
     * The ring's first size: it doubles as answers wait, up to {@link #RING}. Most connections
     * never have more than a few answers unread, and an idle one none: the whole ring is 256 KiB.
     */
    static final int FIRST_RING = 16;

    private final TcpTransmitter tx;
    private long[] start = new long[FIRST_RING], end = new long[FIRST_RING];
    private int first, count;
    private long bytes;
    private long stallSince;
    private long sentSeen = -1;

    AnswerBacklog(TcpTransmitter tx) {
        this.tx = tx;
    }

    /** The bytes of answers the peer has not read; those the socket took are dropped here. */
    long waiting() {
        long sent = tx.sentTotal();
        while (count > 0 && end[first] <= sent) {
            bytes -= end[first] - start[first];
            first = (first + 1) & (start.length - 1);
            count--;
        }
        if (count == RING) {
            return Long.MAX_VALUE;
        }
        return count == 0 ? 0 : bytes - Math.max(0, sent - start[first]);
    }

    /** Notes an answer queued at [from, to) of the bytes ever queued (under the transmit lock). */
    void queued(long from, long to) {
        waiting();   // drops what was sent, to make room
        if (count == RING) {
            return;   // counted as over the limit already
        }
        if (count == start.length) {
            grow();
        }
        int i = (first + count) & (start.length - 1);
        start[i] = from;
        end[i] = to;
        bytes += to - from;
        count++;
    }

    /** Twice the ring, the waiting answers first in it, in order. */
    private void grow() {
        int n = start.length;
        long[] s = new long[n * 2], e = new long[n * 2];
        for (int k = 0; k < count; k++) {
            s[k] = start[(first + k) & (n - 1)];
            e[k] = end[(first + k) & (n - 1)];
        }
        start = s;
        end = e;
        first = 0;
    }

    /** Ring entries held now (for tests: it grows from {@value #FIRST_RING} as answers wait). */
    int capacity() {
        return start.length;
    }

    /** Whether a READ or atomic must wait now: the answers are over the limit. */
    boolean over() {
        return waiting() > LIMIT;
    }

    /** While over the limit: the reason to end the connection once the socket took nothing for the stall time; else null. */
    String stalled() {
        long sent = tx.sentTotal();
        long now = System.nanoTime();
        if (sent != sentSeen) {
            sentSeen = sent;
            stallSince = now;
            return null;
        }
        return now - stallSince > STALL_NANOS
                ? "the peer has not read " + waiting() + " bytes of answers for " + STALL_NANOS / 1_000_000 + " ms"
                : null;
    }
}
