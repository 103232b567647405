package dev.jrdma.provider.tcp;

/**
 * Finds a silent peer as verbs does: the request at the head of the send queue, on the wire,
 * that the peer has not answered within {@code (retryCount + 1) x 4.096 us x 2^ackTimeout}
 * fails with RETRY_EXC_ERR and the queue pair goes to error. TCP alone does not notice a peer
 * that is stopped or wedged: its kernel goes on acknowledging. With ackTimeout -1 (the
 * connection manager's own on verbs) the exponent is {@value #DEFAULT_ACK_TIMEOUT}, rdma_cm's on
 * RoCE: 2.1 s a try. Any byte from the peer, or its RNR_WAIT, starts the head's time again.
 * Progress thread only; it reads the clock on one look in eight, not on every pass.
 */
final class AnswerTimer {
    static final int DEFAULT_ACK_TIMEOUT = 19;

    private final long budgetNanos;
    /** The head position seen at the last look, and when it became the head. */
    private long watchedHead = -1;
    private long watchedSince;
    private int passes;
    private boolean peerSpoke;

    AnswerTimer(int retryCount, int ackTimeout) {
        int exponent = ackTimeout < 0 ? DEFAULT_ACK_TIMEOUT : ackTimeout;
        budgetNanos = (Math.max(0, retryCount) + 1L) * Math.round(4096.0 * Math.pow(2, exponent));
    }

    long budgetNanos() {
        return budgetNanos;
    }

    /** Whether this pass should look at the head at ring position {@code head}: one in eight, or a new head. */
    boolean due(long head) {
        return (++passes & 7) == 0 || watchedHead != head;
    }

    /**
     * Whether the request at ring position {@code head} has waited past the budget (after
     * {@link #due}). {@code excused}: the head may not have left here yet, or this side is not
     * reading the peer's answers; neither is the peer's silence, so its time starts again.
     */
    boolean expired(long head, boolean excused) {
        long now = System.nanoTime();
        if (watchedHead != head || peerSpoke || excused) {
            peerSpoke = false;
            watchedHead = head;
            watchedSince = now;
            return false;
        }
        return now - watchedSince > budgetNanos;
    }

    /** Bytes came from the peer: it is alive (a flag, not a clock read: this runs for every read). */
    void peerAlive() {
        peerSpoke = true;
    }

    /** The peer said the request at {@code head} waits for a receive there (RNR): its time starts again. */
    void restart(long head) {
        watchedHead = head;
        watchedSince = System.nanoTime();
    }
}
