package dev.jrdma;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.BiConsumer;

/**
 * A workload whose every byte and every completion is checked, for the fault tests: a client
 * connection writes, reads, sends and runs atomics against a server that exposes one region, with
 * up to {@value #WINDOW} operations in flight (or as many as given). The link under it may drop, reorder, duplicate and
 * delay packets; what must hold anyway, and what {@link #run} checks:
 * <ul>
 * <li>every posted operation completes exactly once (a handler called twice, or never, is an
 *     error), and none fails;</li>
 * <li>written and read bytes match what was sent, byte for byte;</li>
 * <li>every message arrives once, in order, intact;</li>
 * <li>fetch-and-add's prior values are exactly 0..n-1 (an add applied twice or lost shows as a
 *     gap or a repeat) and the word ends at n; a chain of compare-and-swaps each sees the value
 *     the one before left.</li>
 * </ul>
 * The server's side is checked in its own memory, not through the connection under test.
 */
final class CheckedWorkload implements AutoCloseable {
    static final int CHUNK = 4096, WRITES = 64, READS = 64, SENDS = 200, SEND_SIZE = 512, ADDS = 200, SWAPS = 50;
    /** Operations in flight on one connection, by default. */
    static final int WINDOW = 16;
    /** Operations one {@link #run} posts. */
    static final int OPERATIONS = WRITES + READS + SENDS + ADDS + SWAPS;
    private static final long WRITE_AT = 0, READ_AT = (long) WRITES * CHUNK, ADD_AT = READ_AT + (long) READS * CHUNK,
            SWAP_AT = ADD_AT + 8, EXPOSED = SWAP_AT + 8;

    private final Rdma server, client;
    /** Whether {@link #close} closes the two Rdma instances (made here) or only what this made on them. */
    private final boolean ownsRdma;
    private final RdmaServer listener;
    private final LocalRegion exposed, local, sendBuffers;
    private final Connection conn;
    private final RemoteRegion remote;
    private final Inbox inbox = new Inbox();
    private final int window;

    /** What one run did: operations and the seconds they took. */
    record Result(int operations, double seconds) {
        double opsPerSecond() {
            return operations / seconds;
        }
    }

    /** A server and a client Rdma of their own, and one connection between them. */
    static CheckedWorkload open(Transport t, ConnectionConfig config) {
        Rdma s = t.server().build(), c = null;
        try {
            c = t.client().build();
            return new CheckedWorkload(s, c, true, t.nextServerAddress(), config, WINDOW);
        } catch (RuntimeException | Error e) {
            if (c != null) {
                c.close();
            }
            s.close();
            throw e;
        }
    }

    /**
     * One more connection between {@code server} (listening at {@code at}) and {@code client},
     * which stay open after {@link #close}: many workloads can share them. {@code window}:
     * operations in flight on it.
     */
    CheckedWorkload(Rdma server, Rdma client, java.net.InetSocketAddress at, ConnectionConfig config, int window) {
        this(server, client, false, at, config, window);
    }

    private CheckedWorkload(Rdma server, Rdma client, boolean ownsRdma, java.net.InetSocketAddress at,
                            ConnectionConfig config, int window) {
        this.window = window;
        this.server = server;
        this.client = client;
        this.ownsRdma = ownsRdma;
        exposed = server.allocate(EXPOSED);
        listener = server.listen(at, config, accepted -> accepted.onReceive(inbox));
        local = client.allocate(Math.max(WRITES, READS) * (long) CHUNK);
        sendBuffers = client.allocate((long) SENDS * SEND_SIZE);
        conn = client.connect(listener.address(), config);
        remote = RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor());
    }

    Connection connection() {
        return conn;
    }

    /** The server's exposed region, as the client's descriptor names it. */
    RemoteRegion remote() {
        return remote;
    }

    /** The client's region the writes go from and the reads into. */
    LocalRegion local() {
        return local;
    }

    /**
     * One round of every kind, its data derived from {@code seed} (each round writes different
     * bytes, so a stale copy cannot pass for a fresh one); throws AssertionError naming the first
     * thing that did not hold, after at most {@code bound}.
     */
    Result run(int seed, Duration bound) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        long began = System.nanoTime();
        List<Ledger<?>> ledgers = new ArrayList<>();
        exposed.segment().set(ValueLayout.JAVA_LONG, ADD_AT, 0);
        exposed.segment().set(ValueLayout.JAVA_LONG, SWAP_AT, 0);

        // Writes: the client's bytes land in the server's region.
        fill(local.segment(), WRITES * (long) CHUNK, seed);
        Ledger<Void> writes = new Ledger<>("write", WRITES, window, null);
        ledgers.add(writes);
        for (int i = 0; i < WRITES; i++) {
            writes.acquire(deadline);
            conn.write(local.slice((long) i * CHUNK, CHUNK), remote.slice(WRITE_AT + (long) i * CHUNK, CHUNK), i, writes);
        }
        writes.await(WRITES, deadline);
        expectSame("written", local.segment(), exposed.segment().asSlice(WRITE_AT, WRITES * (long) CHUNK));

        // Reads: the server's bytes land in the client's region.
        fill(exposed.segment().asSlice(READ_AT, READS * (long) CHUNK), READS * (long) CHUNK, seed + 1);
        local.segment().fill((byte) 0);
        Ledger<Void> reads = new Ledger<>("read", READS, window, null);
        ledgers.add(reads);
        for (int i = 0; i < READS; i++) {
            reads.acquire(deadline);
            conn.read(remote.slice(READ_AT + (long) i * CHUNK, CHUNK), local.slice((long) i * CHUNK, CHUNK), i, reads);
        }
        reads.await(READS, deadline);
        expectSame("read", exposed.segment().asSlice(READ_AT, READS * (long) CHUNK), local.segment());

        // Sends: each message carries its sequence number and bytes derived from it.
        inbox.expect(seed, SENDS);
        Ledger<Void> sends = new Ledger<>("send", SENDS, window, null);
        ledgers.add(sends);
        for (int i = 0; i < SENDS; i++) {
            sends.acquire(deadline);
            LocalRegion buf = sendBuffers.slice((long) i * SEND_SIZE, SEND_SIZE);
            Inbox.compose(buf.segment(), seed, i);
            conn.send(buf, i, sends);
        }
        sends.await(SENDS, deadline);
        inbox.await(deadline);

        // Fetch-and-add: the prior values, together, are exactly 0..ADDS-1.
        BitSet seen = new BitSet(ADDS);
        Queue<String> repeats = new ConcurrentLinkedQueue<>();
        Ledger<Long> adds = new Ledger<>("fetchAndAdd", ADDS, window, (i, prior) -> {
            synchronized (seen) {
                if (prior < 0 || prior >= ADDS || seen.get(prior.intValue())) {
                    repeats.add("fetchAndAdd #" + i + " saw " + prior);
                } else {
                    seen.set(prior.intValue());
                }
            }
        });
        ledgers.add(adds);
        for (int i = 0; i < ADDS; i++) {
            adds.acquire(deadline);
            conn.fetchAndAdd(remote.slice(ADD_AT, 8), 1, i, adds);
        }
        adds.await(ADDS, deadline);
        check(repeats.isEmpty(), () -> "fetch-and-add applied twice or lost: " + repeats);
        check(seen.cardinality() == ADDS, () -> "fetch-and-add's prior values miss " + (ADDS - seen.cardinality()));
        long word = exposed.segment().get(ValueLayout.JAVA_LONG, ADD_AT);
        check(word == ADDS, () -> "after " + ADDS + " fetch-and-adds of 1 the word is " + word);

        // Compare-and-swap, one at a time: each must find what the one before left.
        Ledger<Long> swaps = new Ledger<>("compareAndSwap", SWAPS, window, (i, prior) -> {
            if (prior != (long) i) {
                repeats.add("compareAndSwap #" + i + " found " + prior + ", not " + i);
            }
        });
        ledgers.add(swaps);
        for (int i = 0; i < SWAPS; i++) {
            swaps.acquire(deadline);
            conn.compareAndSwap(remote.slice(SWAP_AT, 8), i, i + 1, i, swaps);
            swaps.await(i + 1, deadline);
        }
        check(repeats.isEmpty(), () -> "compare-and-swap chain broken: " + repeats);
        long swapped = exposed.segment().get(ValueLayout.JAVA_LONG, SWAP_AT);
        check(swapped == SWAPS, () -> "after " + SWAPS + " chained compare-and-swaps the word is " + swapped);

        double seconds = (System.nanoTime() - began) / 1e9;
        // Last, so that a late second completion of an early operation is seen too.
        for (Ledger<?> l : ledgers) {
            l.expectExactlyOnce();
        }
        return new Result(OPERATIONS, seconds);
    }

    /** Fills the first {@code n} bytes of {@code s} from {@code seed}. */
    static void fill(MemorySegment s, long n, int seed) {
        for (long p = 0; p < n; p++) {
            s.set(ValueLayout.JAVA_BYTE, p, (byte) (p * 31 + seed * 131 + (p >>> 9)));
        }
    }

    private static void expectSame(String what, MemorySegment expected, MemorySegment got) {
        long at = MemorySegment.mismatch(expected, 0, expected.byteSize(), got, 0, got.byteSize());
        check(at == -1, () -> what + " bytes differ first at offset " + at + " of " + expected.byteSize());
    }

    static void check(boolean ok, java.util.function.Supplier<String> what) {
        if (!ok) {
            throw new AssertionError(what.get());
        }
    }

    private static void await(CountDownLatch latch, long deadline, java.util.function.Supplier<String> what)
            throws InterruptedException {
        if (!latch.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            throw new AssertionError(what.get());
        }
    }

    /**
     * Counts the completions of {@code n} operations numbered by their attachment: each must come
     * once, and none may fail. Also the window: a post first takes a permit, a completion gives it back.
     */
    private static final class Ledger<V> implements CompletionHandler<V, Integer> {
        private final String what;
        private final AtomicIntegerArray calls;
        private final Queue<String> failures = new ConcurrentLinkedQueue<>();
        private final Semaphore window;
        private final int inFlight;
        private final BiConsumer<Integer, V> onValue;
        private int done;   // operations that completed (first calls), under this

        Ledger(String what, int n, int inFlight, BiConsumer<Integer, V> onValue) {
            this.what = what;
            this.inFlight = inFlight;
            this.window = new Semaphore(inFlight);
            this.calls = new AtomicIntegerArray(n);
            this.onValue = onValue;
        }

        void acquire(long deadline) throws InterruptedException {
            if (!window.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new AssertionError(what + ": " + inFlight + " operations in flight did not complete in time; "
                        + done() + " of " + calls.length() + " completed" + failuresText());
            }
        }

        @Override
        public void completed(V value, Integer i) {
            if (calls.incrementAndGet(i) == 1) {
                if (onValue != null) {
                    onValue.accept(i, value);
                }
                ended();
            }
        }

        @Override
        public void failed(Throwable exc, Integer i) {
            failures.add(what + " #" + i + ": " + exc);
            if (calls.incrementAndGet(i) == 1) {
                ended();
            }
        }

        private synchronized void ended() {
            done++;
            window.release();
            notifyAll();
        }

        private synchronized int done() {
            return done;
        }

        /** Waits until {@code n} operations completed; then none may have failed. */
        synchronized void await(int n, long deadline) throws InterruptedException {
            while (done < n) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError(what + ": " + done + " of " + n + " operations completed in time"
                            + failuresText());
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            check(failures.isEmpty(), () -> what + " failed:" + failuresText());
        }

        void expectExactlyOnce() {
            for (int i = 0; i < calls.length(); i++) {
                int c = calls.get(i);
                int at = i;
                check(c == 1, () -> what + " #" + at + " completed " + c + " times, not once");
            }
        }

        private String failuresText() {
            return failures.isEmpty() ? "" : " " + failures.stream().limit(5).toList();
        }
    }

    /** The server's side of the sends: checks each message's order and bytes as it arrives. */
    private static final class Inbox implements java.util.function.BiConsumer<Connection, Message> {
        private volatile int seed, expected, next;
        private final Queue<String> errors = new ConcurrentLinkedQueue<>();
        private volatile CountDownLatch arrived = new CountDownLatch(0);

        static void compose(MemorySegment buf, int seed, int seq) {
            buf.set(ValueLayout.JAVA_INT_UNALIGNED, 0, seq);
            for (int p = 4; p < SEND_SIZE; p++) {
                buf.set(ValueLayout.JAVA_BYTE, p, (byte) (seq * 7 + seed * 13 + p));
            }
        }

        void expect(int seed, int n) {
            this.seed = seed;
            this.next = 0;
            this.expected = n;
            this.arrived = new CountDownLatch(n);
        }

        @Override
        public void accept(Connection c, Message m) {   // on the server's IO thread, one at a time
            MemorySegment d = m.data();
            int seq = m.byteCount() >= 4 ? d.get(ValueLayout.JAVA_INT_UNALIGNED, 0) : -1;
            if (m.byteCount() != SEND_SIZE) {
                errors.add("message " + next + " has " + m.byteCount() + " bytes, not " + SEND_SIZE);
            } else if (seq != next) {
                errors.add("message " + next + " arrived as #" + seq + (seq < next ? " (a repeat)" : " (one lost)"));
            } else {
                for (int p = 4; p < SEND_SIZE; p++) {
                    if (d.get(ValueLayout.JAVA_BYTE, p) != (byte) (seq * 7 + seed * 13 + p)) {
                        errors.add("message " + seq + " differs at byte " + p);
                        break;
                    }
                }
            }
            next++;
            arrived.countDown();
        }

        void await(long deadline) throws InterruptedException {
            CheckedWorkload.await(arrived, deadline, () -> (expected - arrived.getCount()) + " of " + expected
                    + " messages arrived in time " + errors);
            check(errors.isEmpty(), () -> "messages: " + errors.stream().limit(5).toList());
            check(next == expected, () -> next + " messages arrived, not " + expected);
        }
    }

    @Override
    public void close() {
        if (ownsRdma) {
            try {
                client.close();
            } finally {
                server.close();
            }
            return;
        }
        conn.close();
        listener.close();
        for (LocalRegion r : new LocalRegion[] {local, sendBuffers, exposed}) {
            r.close();
        }
    }
}
