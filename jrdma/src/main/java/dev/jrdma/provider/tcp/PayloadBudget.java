package dev.jrdma.provider.tcp;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What peers' frames that cannot be applied yet may hold of this process, all connections of
 * the tcp and shm providers together: bytes of memory (parked requests' payloads, drawn as
 * they arrive, and their records) and time (a frame's payload that stops coming).
 *
 * <p>Memory: a per-connection budget ({@link ParkedRequests#BUDGET}) alone let 4096 connections
 * park 8 MiB each; this budget bounds their sum. A connection that wants more than is left stops
 * being read (TCP flow control holds its peer) until some is given back. Default: an eighth of
 * the maximum heap, at least 16 MiB and at most 256 MiB; {@code -Djrdma.tcp.parkedBudgetBytes}.
 *
 * <p>Time: a frame whose payload makes no progress for {@link #stallNanos} (the peer sends no
 * more of it, or it waits that long for this budget) ends its connection, and with it whatever
 * it held. Default 5 s, the handshake time-out's scale; {@code -Djrdma.tcp.payloadStallMillis}.
 *
 * <p>Thread-safe: every connection's progress thread takes and gives back.
 */
final class PayloadBudget {
    static final String BYTES_PROPERTY = "jrdma.tcp.parkedBudgetBytes";
    static final String STALL_PROPERTY = "jrdma.tcp.payloadStallMillis";
    static final long MIN_DEFAULT = 16L << 20;
    static final long MAX_DEFAULT = 256L << 20;
    static final long DEFAULT_STALL_MILLIS = 5_000;

    private static PayloadBudget process;

    private final long limit;
    private final long stallNanos;
    private final AtomicLong used = new AtomicLong();

    PayloadBudget(long limitBytes, long stallMillis) {
        if (limitBytes < ParkedRequests.FRAME_COST) {
            throw new IllegalArgumentException("a parked payload budget of " + limitBytes + " bytes (-D" + BYTES_PROPERTY
                    + "): it must be at least " + ParkedRequests.FRAME_COST + " (one frame's record)");
        }
        if (stallMillis <= 0 || stallMillis > Long.MAX_VALUE / 1_000_000) {
            throw new IllegalArgumentException("a payload stall deadline of " + stallMillis + " ms (-D" + STALL_PROPERTY
                    + "): it must be positive and at most " + Long.MAX_VALUE / 1_000_000);
        }
        this.limit = limitBytes;
        this.stallNanos = stallMillis * 1_000_000;
    }

    /**
     * The process's budget, made at first use from the system properties; a bad value throws
     * {@link IllegalArgumentException} naming it (each time: nothing is made until they are right).
     */
    static synchronized PayloadBudget process() {
        if (process == null) {
            process = of(System.getProperty(BYTES_PROPERTY), System.getProperty(STALL_PROPERTY),
                    Runtime.getRuntime().maxMemory());
        }
        return process;
    }

    /** A budget from the properties' values ({@code bytes}, {@code stallMillis}; null: the default) and the heap's maximum. */
    static PayloadBudget of(String bytes, String stallMillis, long maxHeap) {
        return new PayloadBudget(parse(BYTES_PROPERTY, bytes, defaultBytes(maxHeap)),
                parse(STALL_PROPERTY, stallMillis, DEFAULT_STALL_MILLIS));
    }

    /** An eighth of {@code maxHeap}, within [{@value #MIN_DEFAULT}, {@value #MAX_DEFAULT}] bytes. */
    static long defaultBytes(long maxHeap) {
        return Math.clamp(maxHeap / 8, MIN_DEFAULT, MAX_DEFAULT);
    }

    private static long parse(String name, String v, long otherwise) {
        if (v == null) {
            return otherwise;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("-D" + name + "=" + v + ": not a whole number", e);
        }
    }

    /** Takes {@code bytes}; false (nothing taken) when fewer are left. */
    boolean tryTake(long bytes) {
        for (long u = used.get(); ; ) {
            if (bytes > limit - u) {
                return false;
            }
            long was = used.compareAndExchange(u, u + bytes);
            if (was == u) {
                return true;
            }
            u = was;
        }
    }

    /** Gives back {@code bytes} taken before. */
    void giveBack(long bytes) {
        used.addAndGet(-bytes);
    }

    long limit() {
        return limit;
    }

    /** Bytes taken now (for tests and diagnostics). */
    long inUse() {
        return used.get();
    }

    /** How long a frame's payload may make no progress before its connection ends. */
    long stallNanos() {
        return stallNanos;
    }

    @Override
    public String toString() {
        return limit + " bytes for parked payloads (-D" + BYTES_PROPERTY + ")";
    }
}
