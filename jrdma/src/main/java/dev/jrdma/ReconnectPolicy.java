package dev.jrdma;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Whether, and how patiently, a client connection connects again after it failed (see
 * {@link ConnectionConfig.Builder#reconnect}). The delay before attempt {@code n} (from 1) is
 * {@code first × 2^(n-1)}, at most {@code max}, less a random part of up to {@code jitter} of it
 * (so that many clients of a restarted server do not all come back in the same instant).
 * Attempts stop at {@link #maxAttempts} or once {@link #giveUpAfter} has passed since the
 * failure, whichever comes first; a successful reconnect starts the count again.
 *
 * <p>Immutable: the {@code with…} methods return a new policy.
 */
public final class ReconnectPolicy {
    /** Never reconnect: a failed connection stays failed (the default). */
    public static final ReconnectPolicy NEVER = new ReconnectPolicy(Duration.ZERO, Duration.ZERO, 0, Duration.ZERO, 0);
    /** "No limit" as a Duration that still converts to nanoseconds. */
    private static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE);

    private final Duration first;
    private final Duration max;
    private final int maxAttempts;
    private final Duration giveUpAfter;
    private final double jitter;

    private ReconnectPolicy(Duration first, Duration max, int maxAttempts, Duration giveUpAfter, double jitter) {
        this.first = first;
        this.max = max;
        this.maxAttempts = maxAttempts;
        this.giveUpAfter = giveUpAfter;
        this.jitter = jitter;
    }

    /**
     * Exponential backoff from {@code first} up to {@code max} between attempts, with no limit on
     * attempts or time until one is set, and a jitter of 0.2.
     *
     * @param first the wait before the first attempt (zero or more)
     * @param max the longest wait between attempts (at least {@code first})
     * @return the new policy
     * @throws IllegalArgumentException when {@code first} is negative or {@code max} less than {@code first}
     */
    public static ReconnectPolicy backoff(Duration first, Duration max) {
        Objects.requireNonNull(first, "first");
        Objects.requireNonNull(max, "max");
        if (first.isNegative() || max.compareTo(first) < 0) {
            throw new IllegalArgumentException("reconnect backoff: first (" + first + ") must be >= 0 and max ("
                    + max + ") >= first");
        }
        return new ReconnectPolicy(first, max, Integer.MAX_VALUE, FOREVER, 0.2);
    }

    /**
     * At most {@code n} attempts after a failure (n >= 1).
     *
     * @param n attempts, at least 1
     * @return the new policy
     */
    public ReconnectPolicy withMaxAttempts(int n) {
        requireBackoff("withMaxAttempts");
        if (n < 1) {
            throw new IllegalArgumentException("reconnect maxAttempts must be >= 1, not " + n);
        }
        return new ReconnectPolicy(first, max, n, giveUpAfter, jitter);
    }

    /**
     * No attempt starts later than {@code total} after the failure.
     *
     * @param total the time after a failure past which no attempt starts
     * @return the new policy
     */
    public ReconnectPolicy withGiveUpAfter(Duration total) {
        requireBackoff("withGiveUpAfter");
        Objects.requireNonNull(total, "total");
        if (total.isNegative() || total.isZero()) {
            throw new IllegalArgumentException("reconnect giveUpAfter must be > 0, not " + total);
        }
        return new ReconnectPolicy(first, max, maxAttempts, total, jitter);
    }

    /**
     * Up to this part (0 to 1) of each delay is taken off at random; 0: exact delays.
     *
     * @param part the part of each delay, 0 to 1
     * @return the new policy
     */
    public ReconnectPolicy withJitter(double part) {
        requireBackoff("withJitter");
        if (!(part >= 0 && part <= 1)) {
            throw new IllegalArgumentException("reconnect jitter must be in [0, 1], not " + part);
        }
        return new ReconnectPolicy(first, max, maxAttempts, giveUpAfter, part);
    }

    private void requireBackoff(String what) {
        if (this == NEVER) {
            throw new IllegalStateException(what + ": NEVER has no attempts to shape; start from backoff(first, max)");
        }
    }

    /** {@return whether a failed connection connects again: false only for {@link #NEVER}} */
    public boolean reconnects() {
        return this != NEVER;
    }

    /** {@return the wait before the first attempt; each later one doubles it, up to {@link #max()}} */
    public Duration first() {
        return first;
    }

    /** {@return the longest wait between two attempts} */
    public Duration max() {
        return max;
    }

    /**
     * Attempts after one failure before giving up ({@link Integer#MAX_VALUE}: no limit).
     *
     * @return attempts after one failure before giving up ({@link Integer#MAX_VALUE}: no limit)
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * {@return how long after a failure an attempt may still start; no limit unless {@link
     * #withGiveUpAfter} set one}
     */
    public Duration giveUpAfter() {
        return giveUpAfter;
    }

    /**
     * {@return the share of each wait, 0 to 1, that is taken off at random so that many clients do not
     * retry in step}
     */
    public double jitter() {
        return jitter;
    }

    /** The delay before attempt {@code attempt} (from 1), in nanoseconds, jitter applied. */
    long delayNanos(int attempt) {
        long firstNs = first.toNanos();
        long maxNs = max.toNanos();
        long d = firstNs;
        for (int i = 1; i < attempt && d < maxNs; i++) {
            d = d > maxNs / 2 ? maxNs : d * 2;
        }
        d = Math.min(d, maxNs);
        if (jitter > 0 && d > 0) {
            d -= (long) (d * jitter * ThreadLocalRandom.current().nextDouble());
        }
        return d;
    }

    @Override
    public String toString() {
        if (this == NEVER) {
            return "ReconnectPolicy[never]";
        }
        return "ReconnectPolicy[backoff " + first + " to " + max + ", jitter " + jitter
                + (maxAttempts == Integer.MAX_VALUE ? "" : ", at most " + maxAttempts + " attempts")
                + (giveUpAfter.equals(FOREVER) ? "" : ", giving up after " + giveUpAfter) + "]";
    }
}
