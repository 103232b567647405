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
 * failure, whichever comes first.
 *
 * <p><b>Only a healthy connection starts the count again.</b> A reconnected connection is on
 * probation until it has stayed up {@link #healthyAfter} (default {@value #DEFAULT_HEALTHY_AFTER_SECONDS}
 * s): if it fails sooner, the round goes on where it was (the next attempt is the one after, the
 * time since the first failure still counts, the backoff keeps growing), so a server that accepts
 * every connection and drops it at once meets the policy's limits as a server that refuses them
 * does. Only time counts, not traffic: a hostile server answers an operation as cheaply as it
 * completes a handshake. The connection the application made itself is not on probation: its
 * first failure always starts a round. A round that gives up after such connections tells
 * {@link ConnectionListener#gaveUp} a {@link dev.jrdma.exceptions.ConnectionClosedException}
 * that says how many attempts connected and were dropped, with the last failure as its cause.
 *
 * <p>Immutable: the {@code with…} methods return a new policy.
 */
public final class ReconnectPolicy {
    /** Never reconnect: a failed connection stays failed (the default). */
    public static final ReconnectPolicy NEVER = new ReconnectPolicy(Duration.ZERO, Duration.ZERO, 0, Duration.ZERO, 0,
            Duration.ZERO);
    /**
     * The default {@link #healthyAfter}, in seconds: as long as a client's handshake may take
     * ({@code Rdma.Builder.handshakeTimeout}'s default), longer than a server that crashes soon
     * after each start usually lives, and short enough that a connection that worked for that
     * long earns a fresh budget. A server holding every connection just that long and dropping it
     * still costs a client at most one reconnect per 5 s.
     */
    public static final long DEFAULT_HEALTHY_AFTER_SECONDS = 5;
    private static final Duration DEFAULT_HEALTHY_AFTER = Duration.ofSeconds(DEFAULT_HEALTHY_AFTER_SECONDS);
    /** "No limit" as a Duration that still converts to nanoseconds. */
    private static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE);

    private final Duration first;
    private final Duration max;
    private final int maxAttempts;
    private final Duration giveUpAfter;
    private final double jitter;
    private final Duration healthyAfter;

    private ReconnectPolicy(Duration first, Duration max, int maxAttempts, Duration giveUpAfter, double jitter,
                            Duration healthyAfter) {
        this.first = first;
        this.max = max;
        this.maxAttempts = maxAttempts;
        this.giveUpAfter = giveUpAfter;
        this.jitter = jitter;
        this.healthyAfter = healthyAfter;
    }

    /**
     * Exponential backoff from {@code first} up to {@code max} between attempts, with no limit on
     * attempts or time until one is set, a jitter of 0.2, and a reconnected connection healthy after
     * {@value #DEFAULT_HEALTHY_AFTER_SECONDS} s up.
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
        return new ReconnectPolicy(first, max, Integer.MAX_VALUE, FOREVER, 0.2, DEFAULT_HEALTHY_AFTER);
    }

    /**
     * At most {@code n} attempts after a failure (n >= 1); an attempt whose connection fails before
     * it is healthy ({@link #healthyAfter}) is one of them.
     *
     * @param n attempts, at least 1
     * @return the new policy
     */
    public ReconnectPolicy withMaxAttempts(int n) {
        requireBackoff("withMaxAttempts");
        if (n < 1) {
            throw new IllegalArgumentException("reconnect maxAttempts must be >= 1, not " + n);
        }
        return new ReconnectPolicy(first, max, n, giveUpAfter, jitter, healthyAfter);
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
        if (total.isNegative() || total.isZero() || total.compareTo(FOREVER) > 0) {
            // past Long.MAX_VALUE ns the attempts' clock could not count it (toNanos would throw)
            throw new IllegalArgumentException("reconnect giveUpAfter must be > 0 and at most " + FOREVER + ", not " + total);
        }
        return new ReconnectPolicy(first, max, maxAttempts, total, jitter, healthyAfter);
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
        return new ReconnectPolicy(first, max, maxAttempts, giveUpAfter, part, healthyAfter);
    }

    /**
     * A reconnected connection counts as healthy, and its failure starts the count of attempts
     * and time again, only once it has stayed up {@code upFor}; one that fails sooner goes on
     * with the round it ended (see the class comment).
     *
     * @param upFor how long a reconnected connection stays up before it is healthy, more than 0
     *              and at most {@code Long.MAX_VALUE} ns (292 years)
     * @return the new policy
     * @throws IllegalArgumentException when {@code upFor} is zero, negative or too long to count in nanoseconds
     */
    public ReconnectPolicy withHealthyAfter(Duration upFor) {
        requireBackoff("withHealthyAfter");
        Objects.requireNonNull(upFor, "upFor");
        if (upFor.isNegative() || upFor.isZero() || upFor.compareTo(FOREVER) > 0) {
            throw new IllegalArgumentException("reconnect healthyAfter must be > 0 and at most " + FOREVER + ", not "
                    + upFor);
        }
        return new ReconnectPolicy(first, max, maxAttempts, giveUpAfter, jitter, upFor);
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

    /**
     * {@return how long a reconnected connection must stay up before its failure starts the count
     * of attempts and time again ({@value #DEFAULT_HEALTHY_AFTER_SECONDS} s unless {@link
     * #withHealthyAfter} set it; zero for {@link #NEVER})}
     */
    public Duration healthyAfter() {
        return healthyAfter;
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
        return "ReconnectPolicy[backoff " + first + " to " + max + ", jitter " + jitter + ", healthy after " + healthyAfter
                + (maxAttempts == Integer.MAX_VALUE ? "" : ", at most " + maxAttempts + " attempts")
                + (giveUpAfter.equals(FOREVER) ? "" : ", giving up after " + giveUpAfter) + "]";
    }
}
