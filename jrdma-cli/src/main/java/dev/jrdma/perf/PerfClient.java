package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.Batch;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.RdmaException;

import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The client end of {@code jrdma perf}: connects, then per size tells the server the test,
 * runs it and measures, polling on its own thread (INLINE, POLLING, single-threaded) as perftest does. Latency
 * tests time each operation (ping-pong tests a round trip, reported halved); bandwidth tests
 * keep {@code -t} operations in flight and time the lot. Before each size, untimed rounds run
 * until the figure settles with the JIT quiet ({@link WarmUp}): what is measured is the library's
 * steady state, not the JIT's warm-up.
 */
final class PerfClient implements AutoCloseable {
    /** The warm-up count jrdma perf used before it warmed up until settled; PerftestComparison's floor. */
    static final int WARM_UP_MAX = 10_000;

    /**
     * One size's result: latency stats, or bandwidth figures (MB = 2^20 bytes, as perftest); for
     * send_bw -c UD also the datagrams the server received ({@code delivered}, -1 otherwise: a
     * connection delivers all).
     */
    record Result(int bytes, int iterations, LatencyStats latency, double peakMBps, double avgMBps, double mpps,
                  WarmUp warmUp, long delivered) {
        Result(int bytes, int iterations, LatencyStats latency, double peakMBps, double avgMBps, double mpps) {
            this(bytes, iterations, latency, peakMBps, avgMBps, mpps, null, -1);
        }

        Result after(WarmUp w) {
            return new Result(bytes, iterations, latency, peakMBps, avgMBps, mpps, w, delivered);
        }

        Result delivered(long d) {
            return new Result(bytes, iterations, latency, peakMBps, avgMBps, mpps, warmUp, d);
        }

        /** What a warm-up round compares: the typical latency, or the average bandwidth. */
        double figure() {
            return latency != null ? latency.typical() : avgMBps;
        }
    }

    private final PerfOptions options;
    private final Rdma rdma;
    private final LocalRegion mine, out, control;
    private final Connection c;
    private final RemoteRegion peer;
    private final int ackTimeout;
    private final PrintStream progress;
    /** -c UD: the datagram endpoint the send tests use; null: they use the connection. */
    private final DatagramRuns.Client ud;

    PerfClient(PerfOptions o, InetSocketAddress server, PrintStream progress) {
        this.options = o;
        this.progress = progress;
        this.rdma = o.open();
        try {
            int region = Math.max(8, o.maxSize());
            this.mine = rdma.allocate(region);
            this.out = rdma.allocate(region);
            this.control = rdma.allocate(PerfControl.BYTES);
            CompletableFuture<Connection> connecting = rdma.connectAsync(server, o.connectionConfig(rdma, mine, PerfServer.RECEIVE_DEPTH));
            this.c = PerfControl.await(rdma, null, connecting, "connecting to " + server);
            this.peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
            this.ackTimeout = c.queuePair().ackTimeout();
            this.ud = o.datagrams() ? new DatagramRuns.Client(rdma, c, o.txDepth()) : null;
        } catch (RuntimeException e) {
            rdma.close();
            throw e;
        }
    }

    /** What this client runs on, for the report. */
    RunFacts facts() {
        return new RunFacts(rdma.providerName(), rdma.deviceName(), sendWindow(options.test()), ackTimeout);
    }

    /**
     * Operations kept in flight by a bandwidth test: -t; for send_bw no more than the receives
     * the server keeps posted, so that a send finds one as perftest's do (its server posts 512).
     */
    private int sendWindow(PerfTest test) {
        if (ud != null) {
            return Math.min(options.txDepth(), 4096);   // a datagram endpoint's most sends in flight
        }
        int serverReceives = c.peerReceiveQueueDepth() > 0 ? c.peerReceiveQueueDepth() : PerfServer.RECEIVE_DEPTH;
        return test == PerfTest.SEND_BW ? Math.min(options.txDepth(), serverReceives) : options.txDepth();
    }

    List<Result> runAll() {
        List<Result> results = new ArrayList<>();
        for (int size : options.sizes()) {
            if (ud != null && size > ud.maxMessageSize()) {
                if (options.sizes().size() > 1) {
                    continue;   // -a: up to what a datagram carries here, as perftest's UD tests stop at the MTU
                }
                throw new IllegalArgumentException("-c UD: " + size + " bytes is more than a datagram carries on "
                        + rdma.providerName() + " here (" + ud.maxMessageSize() + ")");
            }
            results.add(run(size));
        }
        PerfControl.send(rdma, c, control, PerfControl.BYE, 0, 0, 0);
        return results;
    }

    /**
     * One size: untimed rounds until the figure settles (see {@link WarmUp}; {@code --warmup N}:
     * N iterations), then the timed run. Each round is a run of its own with the server (START,
     * its iterations, END), so the server warms up with it.
     */
    private Result run(int size) {
        int n = options.iterations();
        PerfTest test = options.test();
        java.util.function.IntToDoubleFunction round = count -> session(test, size, count, false).figure();
        // Rounds of up to 2 000 iterations, and up to 64 MiB: a round of big transfers is long already.
        int roundSize = (int) Math.max(10, Math.min(Math.min(n, 2000), (64L << 20) / size));
        WarmUp w = options.warmUp() >= 0 ? WarmUp.counted(options.warmUp(), roundSize, round)
                : WarmUp.untilSettled(roundSize, size == options.sizes().getFirst(), round);
        return session(test, size, n, true).after(w);
    }

    /** {@code count} iterations of {@code test} at {@code size} with the server; {@code shown}: with a progress line. */
    private Result session(PerfTest test, int size, int count, boolean shown) {
        // The marks of write_lat start again at 1 in every run: forget the last one the server wrote.
        mine.segment().set(ValueLayout.JAVA_BYTE, size - 1, (byte) 0);
        PerfControl.send(rdma, c, control, PerfControl.START, test.ordinal() | (ud != null ? PerfControl.DATAGRAMS : 0), size, count);
        int[] ready = PerfControl.expect(rdma, c, PerfControl.READY);
        if (ud != null) {
            ud.serverAt(ready[1]);   // READY carries the server endpoint's port
        }
        Result r = ud != null ? datagrams(test, size, count, shown)
                : test.latency() ? latency(test, size, count, shown) : bandwidth(test, size, count, shown);
        PerfControl.send(rdma, c, control, PerfControl.END, ud != null ? count : 0, 0, 0);
        int[] ended = PerfControl.expect(rdma, c, PerfControl.ENDED);
        return ud != null && !test.latency() ? r.delivered(ended[1]) : r;
    }

    /** send_lat or send_bw -c UD ({@link DatagramRuns}). */
    private Result datagrams(PerfTest test, int size, int n, boolean shown) {
        Progress p = new Progress(test, size, n, shown);
        LocalRegion src = out.slice(0, size);
        if (test.latency()) {
            long[] ns = new long[n];
            ud.latency(src, n, ns);
            p.end();
            return new Result(size, n, LatencyStats.of(ns, 2), 0, 0, 0);
        }
        long[] timed = ud.bandwidth(src, n);
        p.end();
        double avg = (double) timed[1] * size / (timed[0] / 1e9), mb = 1 << 20;
        return new Result(size, n, null, avg / mb, avg / mb, timed[1] * 1e3 / timed[0]);
    }

    private Result latency(PerfTest test, int size, int n, boolean shown) {
        long[] ns = new long[n];
        // -Djrdma.perf.postTimes=true: read_lat also times each post alone (one more clock read per
        // iteration), to tell the post's share from the wait's; printed to stderr.
        long[] postNs = shown && test == PerfTest.READ_LAT && Boolean.getBoolean("jrdma.perf.postTimes") ? new long[n] : null;
        LatencyStep step = new LatencyStep(test, size, postNs);
        Counter<Void> done = step.done, replies = step.replies;
        if (test == PerfTest.SEND_LAT) {
            c.onReceive((conn, m) -> replies.completed++);
        }
        Progress p = new Progress(test, size, n, shown);
        step.start(ns, p);
        for (int i = 0; i < n; i++) {
            step.timed(i);
        }
        if (test.pingPong()) {
            drain(rdma, c, done, n);   // their writes and sends were not waited for one by one
        }
        if (test == PerfTest.SEND_LAT) {
            c.onReceive(null);
        }
        p.end();
        if (postNs != null) {
            long[] sorted = postNs.clone();
            java.util.Arrays.sort(sorted);
            System.err.printf(java.util.Locale.ROOT, "jrdma perf: read_lat posts: median %.2f us of the iteration%n",
                    sorted[n / 2] / 1e3);
        }
        return new Result(size, n, LatencyStats.of(ns, test.pingPong() ? 2 : 1), 0, 0, 0);
    }

    static final long PEAK_MIN_NANOS = 2_000_000;

    private Result bandwidth(PerfTest test, int size, int n, boolean shown) {
        LocalRegion src = out.slice(0, size), dst = mine.slice(0, size);
        RemoteRegion target = peer.slice(0, size);
        int window = sendWindow(test);
        int perPost = Math.min(options.postList(), window);
        Batch batch = perPost > 1 ? c.batch() : null;
        Counter<Void> done = new Counter<>();
        Counter<Long> atomics = new Counter<>();
        Counter<long[]> batches = new Counter<>();   // counts each batch's members
        Counter<?> counter = batch != null ? batches : test == PerfTest.ATOMIC_BW ? atomics : done;
        long total = n, posted = 0, start = 0;
        // Peak: the best rate over stretches of at least a tenth of the timed part and PEAK_MIN_NANOS.
        long slice = Math.max(1, n / 10), markCount = 0, markAt = 0, startCount = 0;
        double peak = 0;
        Progress p = new Progress(test, size, total, shown);
        IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
        RemoteRegion word = peer.slice(0, 8);
        while (counter.completed < total) {
            while (batch == null && posted < total && posted - counter.completed < window) {
                switch (test) {
                    case WRITE_BW -> c.write(src, target, null, done);
                    case READ_BW -> c.read(target, dst, null, done);
                    case ATOMIC_BW -> c.fetchAndAdd(word, 1, null, atomics);
                    case SEND_BW -> c.send(src, null, done);
                    default -> throw new IllegalStateException(test.name());
                }
                posted++;
            }
            // -l: whole batches, each posted when the window has room for all of it.
            while (batch != null && posted < total && window - (posted - counter.completed) >= Math.min(perPost, total - posted)) {
                int k = (int) Math.min(perPost, total - posted);
                batch.clear();
                for (int b = 0; b < k; b++) {
                    switch (test) {
                        case WRITE_BW -> batch.write(src, target);
                        case READ_BW -> batch.read(target, dst);
                        case ATOMIC_BW -> batch.fetchAndAdd(word, 1);
                        case SEND_BW -> batch.send(src);
                        default -> throw new IllegalStateException(test.name());
                    }
                }
                batch.submit(null, batches);
                posted += k;
            }
            if (PerfControl.poll(rdma) == 0) {
                if (c.state() != ConnectionState.ESTABLISHED) {
                    throw new RdmaException("the connection ended during " + test.perftestName() + " (" + c.state() + ")");
                }
                if (idle.expired()) {
                    throw new RdmaException(test.perftestName() + ": no operation completed for 60 s ("
                            + (posted - counter.completed) + " outstanding)");
                }
                continue;
            }
            idle.progressed();
            if (start == 0) {   // from the first completion: the pipeline is full from then on
                start = markAt = System.nanoTime();
                markCount = startCount = counter.completed;
            } else if (start != 0 && counter.completed - markCount >= slice) {
                // Completions come in bursts (a poll reaps up to 32): a stretch shorter than
                // PEAK_MIN_NANOS could span two bursts a few ns apart and claim any rate.
                long now = System.nanoTime();
                if (now - markAt >= PEAK_MIN_NANOS) {
                    peak = Math.max(peak, (double) (counter.completed - markCount) * size / ((now - markAt) / 1e9));
                    markAt = now;
                    markCount = counter.completed;
                }
            }
            p.tick(counter.completed);
        }
        long ns = Math.max(1, System.nanoTime() - start);
        p.end();
        long timed = Math.max(1, counter.completed - startCount);   // the first poll may reap several
        double avg = (double) timed * size / (ns / 1e9);
        double mb = 1 << 20;
        return new Result(size, n, null, Math.max(peak, avg) / mb, avg / mb, timed * 1e3 / ns);
    }

    /**
     * One iteration of a latency test, a method of its own: every warm-up round and the timed run
     * call it, so the JIT compiles it fully as a method. Were it the body of the run's loop, each
     * run would enter that loop afresh, and a method entered a few times is compiled by C2 only on
     * the stack: the timed 1 000 iterations ran in C1's profiling tier (seen: write_lat at 8 B on
     * shm 0.24 to 0.28 us after the default warm-up, 0.19 to 0.22 with this).
     */
    private final class LatencyStep {
        final PerfTest test;
        final LocalRegion src, dst;
        final RemoteRegion target;
        final int at, spinsPerPoll;
        final long[] postNs;
        // send_lat's replies are counted by a receive callback, as a latency-minded application
        // takes them (no future per message); control messages go to receive() again after the run.
        final Counter<Void> done = new Counter<>(), replies = new Counter<>();
        final Counter<Long> atomics = new Counter<>();

        LatencyStep(PerfTest test, int size, long[] postNs) {
            this.test = test;
            this.src = out.slice(0, size);
            this.dst = mine.slice(0, size);
            this.target = peer.slice(0, size);
            this.at = size - 1;
            this.spinsPerPoll = JrdmaLoopback.spinsPerPoll(rdma.providerName());
            this.postNs = postNs;
        }

        private long[] ns;
        private Progress progress;
        private long t;

        /** Before the first {@link #timed}: where the times go, and the progress line. */
        void start(long[] ns, Progress progress) {
            this.ns = ns;
            this.progress = progress;
            // One clock read per iteration, as perftest takes one timestamp per iteration: an
            // iteration's time runs from the previous one's end (a read costs a lot in the VM).
            this.t = System.nanoTime();
        }

        /** Iteration {@code i}, timed into {@code ns[i]}. */
        void timed(int i) {
            run(i, t);
            long now = System.nanoTime();
            ns[i] = now - t;
            t = now;
            progress.tick(i);
        }

        /** Iteration {@code i}, begun at {@code t} (for {@code postNs}). */
        private void run(int i, long t) {
            switch (test) {
                case WRITE_LAT -> {
                    byte m = PerfServer.mark(i);
                    out.segment().set(ValueLayout.JAVA_BYTE, at, m);
                    c.write(src, target, null, done);
                    PerfControl.poll(rdma);
                    awaitMark(at, m, spinsPerPoll);
                }
                case READ_LAT -> {
                    long before = done.completed;
                    c.read(target, dst, null, done);
                    if (postNs != null) {
                        postNs[i] = System.nanoTime() - t;
                    }
                    awaitCount(done, before + 1);
                }
                case ATOMIC_LAT -> {
                    long before = atomics.completed;
                    c.fetchAndAdd(target, 1, null, atomics);   // size is 8: the word
                    awaitCount(atomics, before + 1);
                }
                case SEND_LAT -> {
                    long before = replies.completed;
                    c.send(src, null, done);
                    awaitCount(replies, before + 1);
                }
                default -> throw new IllegalStateException(test.name());
            }
        }
    }

    private void awaitMark(long at, byte m, int spinsPerPoll) {
        var seg = mine.segment();
        IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
        int spins = 0;
        while ((byte) ValueLayout.JAVA_BYTE.varHandle().getVolatile(seg, at) != m) {
            JrdmaLoopback.spinPause(spinsPerPoll);
            if ((++spins & (spinsPerPoll - 1)) == 0 && PerfControl.poll(rdma) == 0
                    && (c.state() != ConnectionState.ESTABLISHED || idle.expired())) {
                throw new RdmaException("write_lat: the server stopped answering (" + c.state() + ")");
            }
        }
    }

    private void awaitCount(Counter<?> counter, long count) {
        IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
        while (counter.completed < count) {
            if (PerfControl.poll(rdma) == 0 && (c.state() != ConnectionState.ESTABLISHED || idle.expired())) {
                throw new RdmaException("an operation did not complete (" + c.state() + ")");
            }
        }
    }

    /** Polls until {@code done} counted {@code count} completions. */
    static void drain(Rdma rdma, Connection c, Counter<?> done, long count) {
        IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
        long seen = done.completed;
        while (done.completed < count) {
            if (done.completed != seen) {
                seen = done.completed;
                idle.progressed();
            }
            if (PerfControl.poll(rdma) == 0 && (c.state() != ConnectionState.ESTABLISHED || idle.expired())) {
                throw new RdmaException((count - done.completed) + " operations did not complete ("
                        + c.state() + ")");
            }
        }
    }

    /**
     * Counts completions without allocating; the first failure ends the run. A {@link Batch}'s
     * completion (its array of results) counts as many as it had operations.
     */
    static final class Counter<V> implements CompletionHandler<V, Object> {
        long completed;

        @Override
        public void completed(V v, Object a) {
            completed += v instanceof long[] batch ? batch.length : 1;
        }

        @Override
        public void failed(Throwable e, Object a) {
            throw new RdmaException("an operation failed: " + e.getMessage(), e);
        }
    }

    /**
     * A progress line (on stderr, when it is a terminal) for timed runs longer than two seconds,
     * redrawn every second; the warm-up rounds show none. The clock
     * is read every {@code stride} iterations, a stride that doubles while checks come less than
     * 20 ms apart and halves when they come more than 200 ms apart: a fast run reads it a few
     * times per 20 ms, and a slow one (600 one-MiB reads on Soft-RoCE) still shows its progress.
     */
    private final class Progress {
        private static final long DENSE = 20_000_000L, SPARSE = 200_000_000L;
        private final String what;
        private final long total, started = System.nanoTime();
        private long next = started + 2_000_000_000L;
        private final boolean quiet;
        private boolean shown;
        private long stride = 1, nextCheck = 1, lastCheck = started;

        Progress(PerfTest test, int size, long total, boolean show) {
            this.what = test.perftestName() + " " + size + " B";
            this.total = total;
            this.quiet = !show;
        }

        void tick(long done) {
            if (done < nextCheck || progress == null || quiet) {
                return;
            }
            long now = System.nanoTime();
            long since = now - lastCheck;
            lastCheck = now;
            if (since < DENSE && stride < (1 << 16)) {
                stride <<= 1;
            } else if (since > SPARSE && stride > 1) {
                stride >>= 1;
            }
            nextCheck = done + stride;
            if (now > next) {
                progress.printf("\r%s: %d%% of %d timed iterations", what, done * 100 / total, total);
                progress.flush();
                shown = true;
                next = now + 1_000_000_000L;
            }
        }

        void end() {
            if (shown) {
                progress.printf("\r%s: done%30s%n", what, "");
            }
        }
    }

    @Override
    public void close() {
        rdma.close();   // its endpoints too
    }
}
