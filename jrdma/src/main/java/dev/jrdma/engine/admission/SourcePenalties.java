package dev.jrdma.engine.admission;

import dev.jrdma.spi.SourceAddress;

import java.net.InetAddress;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * What each source address has done wrong lately, and how long it must wait before it may try
 * again: the per-source budget of failed attempts (wrong or missing auth tokens) and offences
 * (a key it was not granted, a protocol error) behind the accept policy.
 *
 * <p>Each source gets a free allowance (a mistyped token, a key that went stale in a race); past
 * it, every further failure makes it wait {@code baseDelay x 2^(excess - 1)}, at most
 * {@code maxDelay}, before its next connection request is even looked at. A request made while it
 * waits is refused at once, naming the wait, and is neither checked nor counted: so a brute force
 * gets at most one guess per wait, whatever its rate (from 180 000 guesses in a minute to about
 * 10). A source forgets its record {@code forgetAfter} after its last failure.
 *
 * <p>The table is bounded ({@code maxSources}): past it the source least recently seen that is not
 * waiting goes first (a waiting one only when all are), so a flood of addresses costs a bounded
 * amount of memory and cannot wash a waiting source's record out while clean ones are there.
 * Sources are counted as {@link SourceAddress} says: IPv4 by address, IPv6 by /64.
 *
 * <p>Threads: one owner, the thread that handles the connection manager's events (an
 * {@code Rdma}'s IO thread 0); nothing here is synchronized.
 */
public final class SourcePenalties {
    /** 4 failed auth attempts free, then 100 ms doubling to 10 s; 16 offences free; 60 s memory; 4096 sources. */
    public static final int FREE_AUTH_FAILURES = 4, FREE_OFFENCES = 16, MAX_SOURCES = 4096;
    public static final long BASE_DELAY_NANOS = 100_000_000L, MAX_DELAY_NANOS = 10_000_000_000L,
            FORGET_AFTER_NANOS = 60_000_000_000L;

    private final int freeAuthFailures;
    private final int freeOffences;
    private final long baseDelayNanos;
    private final long maxDelayNanos;
    private final long forgetAfterNanos;
    private final int maxSources;
    private final LongSupplier clock;
    /** In access order (least recently seen first). */
    private final LinkedHashMap<SourceAddress, Record> records = new LinkedHashMap<>(64, 0.75f, true);
    private long authFailures;
    private long offences;
    private long refusedWhileWaiting;

    /** The defaults above, on {@link System#nanoTime}. */
    public SourcePenalties() {
        this(FREE_AUTH_FAILURES, FREE_OFFENCES, BASE_DELAY_NANOS, MAX_DELAY_NANOS, FORGET_AFTER_NANOS, MAX_SOURCES,
                System::nanoTime);
    }

    public SourcePenalties(int freeAuthFailures, int freeOffences, long baseDelayNanos, long maxDelayNanos,
                           long forgetAfterNanos, int maxSources, LongSupplier clock) {
        if (freeAuthFailures < 0 || freeOffences < 0) {
            throw new IllegalArgumentException("free allowances must not be negative: " + freeAuthFailures + ", "
                    + freeOffences);
        }
        if (baseDelayNanos <= 0 || maxDelayNanos < baseDelayNanos || forgetAfterNanos < maxDelayNanos) {
            throw new IllegalArgumentException("delays must satisfy 0 < base (" + baseDelayNanos + " ns) <= max ("
                    + maxDelayNanos + " ns) <= forget after (" + forgetAfterNanos + " ns)");
        }
        if (maxSources < 1) {
            throw new IllegalArgumentException("maxSources must be at least 1, not " + maxSources);
        }
        this.freeAuthFailures = freeAuthFailures;
        this.freeOffences = freeOffences;
        this.baseDelayNanos = baseDelayNanos;
        this.maxDelayNanos = maxDelayNanos;
        this.forgetAfterNanos = forgetAfterNanos;
        this.maxSources = maxSources;
        this.clock = clock;
    }

    /**
     * {@return how long {@code source} must still wait before a request of its is looked at, in
     * nanoseconds; 0 when it may try now} A positive answer counts as a request refused.
     */
    public long waitNanos(InetAddress source) {
        Record r = records.get(SourceAddress.of(source));
        if (r == null) {
            return 0;
        }
        long now = clock.getAsLong();
        long left = r.waitUntil - now;
        if (left > 0) {
            refusedWhileWaiting++;
            return left;
        }
        return 0;
    }

    /** {@code source} presented a wrong or missing auth token. */
    public void authFailed(InetAddress source) {
        authFailures++;
        Record r = record(source);
        r.authFailures++;
        r.failed(clock.getAsLong(), Math.max(r.authFailures - freeAuthFailures, r.offences - freeOffences));
    }

    /** A connection from {@code source} ended for using what it was not granted, or for breaking the protocol. */
    public void offended(InetAddress source) {
        offences++;
        Record r = record(source);
        r.offences++;
        r.failed(clock.getAsLong(), Math.max(r.authFailures - freeAuthFailures, r.offences - freeOffences));
    }

    /** {@return how many sources the table holds now (at most {@code maxSources})} */
    public int sources() {
        return records.size();
    }

    /** {@return wrong or missing auth tokens seen (each one checked), in this table's life} */
    public long authFailures() {
        return authFailures;
    }

    /** {@return offences seen, in this table's life} */
    public long offences() {
        return offences;
    }

    /** {@return requests refused unchecked because their source was waiting, in this table's life} */
    public long refusedWhileWaiting() {
        return refusedWhileWaiting;
    }

    private Record record(InetAddress source) {
        SourceAddress key = SourceAddress.of(source);
        long now = clock.getAsLong();
        Record r = records.get(key);
        if (r != null && now - r.lastFailure > forgetAfterNanos) {
            r = null;   // forgiven: a new record, as for a source never seen
            records.remove(key);
        }
        if (r == null) {
            if (records.size() >= maxSources) {
                evictOne(now);
            }
            r = new Record();
            records.put(key, r);
        }
        return r;
    }

    /** Drops the least recently seen source that is not waiting (or, when all are, the least recently seen). */
    private void evictOne(long now) {
        Iterator<Map.Entry<SourceAddress, Record>> it = records.entrySet().iterator();
        Map.Entry<SourceAddress, Record> first = null;
        while (it.hasNext()) {
            Map.Entry<SourceAddress, Record> e = it.next();
            if (first == null) {
                first = e;
            }
            if (e.getValue().waitUntil - now <= 0) {
                it.remove();
                return;
            }
        }
        if (first != null) {
            records.remove(first.getKey());
        }
    }

    /** One source's failures; its wait grows with the failures past its allowance. */
    private final class Record {
        int authFailures;
        int offences;
        long lastFailure;
        long waitUntil;

        void failed(long now, int excess) {
            lastFailure = now;
            if (excess > 0) {
                int shift = excess - 1;
                // Shifted past its highest bit, base would wrap (to anything, even below max): max then.
                long delay = shift >= Long.numberOfLeadingZeros(baseDelayNanos) - 1 ? maxDelayNanos
                        : Math.min(baseDelayNanos << shift, maxDelayNanos);
                waitUntil = now + delay;
            }
        }
    }
}
