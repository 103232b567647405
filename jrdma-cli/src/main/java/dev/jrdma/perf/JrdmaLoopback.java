package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.CompletionMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicReference;

/**
 * jrdma's side of the loopback benchmarks, one role per process, each with a single spinning
 * thread (INLINE mode: the benchmark thread drives progress), as perftest runs:
 * <ul>
 * <li>{@code write_lat}: ib_write_lat's ping-pong. The client writes 8 bytes (the iteration
 * number) into the server's region; the server, polling its memory, sees it and writes it
 * back into the client's; one round trip per iteration.</li>
 * <li>{@code write_bw}: the client keeps {@value #WINDOW} writes of {@code size} bytes
 * outstanding into the server's region; the server's IO thread applies them (tcp), or sleeps
 * while the client copies into the mapped region (shm).</li>
 * </ul>
 * Descriptors cross in the connection's private data.
 */
final class JrdmaLoopback {
    static final int WINDOW = 16;
    /**
     * write_lat, as ib_write_lat: after posting its write a side polls once for the write's
     * completion (done at once where the write was a copy: shm), then spins on its memory for
     * the peer's, polling every this many spins. Where the peer's write lands without this
     * side's CPU (verbs, shm) a poll there only looks for completions, which ib_write_lat does
     * not do at all while it spins: rarely. On tcp the poll is what reads the socket: often (16
     * spins are a few ns next to its syscall).
     */
    static int spinsPerPoll(String provider) {
        return provider.equals("tcp") ? 16 : 1024;
    }

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private JrdmaLoopback() {
    }

    /** The server role: prints "ready PORT", serves one client, returns when it disconnects. */
    static void serve(String provider, String test, int size) throws Exception {
        boolean lat = test.equals("write_lat");
        // write_bw: the server's IO thread is ADAPTIVE (the default): on tcp it is busy applying
        // the writes, on shm it has nothing to do and sleeps, rather than spin on one of the two
        // CPUs the client's copies need.
        try (Rdma rdma = Rdma.builder().provider(provider)
                .completionMode(lat ? CompletionMode.POLLING : CompletionMode.ADAPTIVE)
                .ioThreads(lat ? Rdma.INLINE : 1).singleThreaded(lat).build();
             LocalRegion mine = rdma.allocate(lat ? 8 : size);
             LocalRegion out = rdma.allocate(8)) {
            AtomicReference<Connection> accepted = new AtomicReference<>();
            try (RdmaServer server = listenAndAnnounce(rdma, mine, accepted)) {
                Connection c = awaitAccepted(rdma, accepted, lat);
                if (!lat) {
                    while (c.state() == dev.jrdma.ConnectionState.ESTABLISHED) {
                        Thread.sleep(5);
                    }
                    return;
                }
                RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
                PerfClient.Counter<Void> done = new PerfClient.Counter<>();
                int spinsPerPoll = spinsPerPoll(provider);
                for (long expect = 1; ; expect++) {
                    if (!awaitValue(rdma, c, mine, expect, spinsPerPoll)) {
                        return;
                    }
                    out.segment().set(ValueLayout.JAVA_LONG, 0, expect);
                    c.write(out, peer, null, done);
                    rdma.poll();
                }
            }
        }
    }

    /**
     * Spins until the first 8 bytes of {@code mine} hold {@code value}, polling every
     * {@code spinsPerPoll} (a power of 2) spins; false when the connection ended first.
     */
    static boolean awaitValue(Rdma rdma, Connection c, LocalRegion mine, long value, int spinsPerPoll) {
        MemorySegment m = mine.segment();
        int spins = 0;
        while ((long) LONG.getVolatile(m, 0L) != value) {
            spinPause(spinsPerPoll);
            if ((++spins & (spinsPerPoll - 1)) == 0 && rdma.poll() == 0
                    && c.state() != dev.jrdma.ConnectionState.ESTABLISHED) {
                return false;
            }
        }
        return true;
    }

    /**
     * One spin of a loop that waits for the peer's write, polling every {@code spinsPerPoll}
     * spins: where that write lands without this side's CPU ({@link #spinsPerPoll} 1024: shm,
     * verbs) it pauses, as the raw floor's loop does. A spin without the pause leaves the loop
     * through a pipeline flush when the line changes (about 35 ns of every shm round trip here),
     * and on a CPU shared with the peer's it takes the cycles the peer's post needs. On tcp the
     * poll reads the socket, so no pause delays it.
     */
    static void spinPause(int spinsPerPoll) {
        if (spinsPerPoll >= 1024) {
            Thread.onSpinWait();
        }
    }

    /**
     * An Rdma whose one thread is the caller's (INLINE), spinning (POLLING), and single-threaded
     * (no lock on its operation path): a latency loop's.
     */
    static Rdma inlinePolling(String provider) {
        return Rdma.builder().provider(provider).completionMode(CompletionMode.POLLING).ioThreads(Rdma.INLINE)
                .singleThreaded(true).build();
    }

    /**
     * Listens on loopback with {@code mine}'s descriptor as the private data each client gets,
     * and prints "ready PORT" for the parent process; connections go to {@code accepted}.
     */
    static RdmaServer listenAndAnnounce(Rdma rdma, LocalRegion mine, AtomicReference<Connection> accepted) {
        ConnectionConfig config = ConnectionConfig.builder().privateData(mine.toRemote().toDescriptor()).build();
        RdmaServer server = rdma.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), config, accepted::set);
        System.out.println("ready " + server.address().getPort());
        System.out.flush();
        return server;
    }

    /** Waits for the first connection: polling the caller's IO thread ({@code inline}), or sleeping. */
    static Connection awaitAccepted(Rdma rdma, AtomicReference<Connection> accepted, boolean inline)
            throws InterruptedException {
        while (accepted.get() == null) {
            if (inline) {
                rdma.poll();
            } else {
                Thread.sleep(1);
            }
        }
        return accepted.get();
    }

    /** write_lat client: the round-trip time of each of {@code iterations}, in ns. */
    static long[] writeLatency(String provider, int port, int iterations) {
        try (Rdma rdma = inlinePolling(provider);
             LocalRegion mine = rdma.allocate(8);
             LocalRegion out = rdma.allocate(8)) {
            ConnectionConfig config = ConnectionConfig.builder().privateData(mine.toRemote().toDescriptor()).build();
            try (Connection c = rdma.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), config)) {
                RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
                PerfClient.Counter<Void> done = new PerfClient.Counter<>();
                int spinsPerPoll = spinsPerPoll(provider);
                long[] rtt = new long[iterations];
                for (int i = 0; i < iterations; i++) {
                    long v = i + 1;
                    long t = System.nanoTime();
                    out.segment().set(ValueLayout.JAVA_LONG, 0, v);
                    c.write(out, peer, null, done);
                    rdma.poll();
                    awaitValue(rdma, c, mine, v, spinsPerPoll);
                    rtt[i] = System.nanoTime() - t;
                }
                while (done.completed < iterations) {
                    rdma.poll();
                }
                return rtt;
            }
        }
    }

    /** write_bw client: bytes per second over {@code count} writes of {@code size}, after {@code count / 2} untimed. */
    static double writeBandwidth(String provider, int port, int size, int count) {
        try (Rdma rdma = inlinePolling(provider);
             LocalRegion src = rdma.allocate(size)) {
            try (Connection c = rdma.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))) {
                RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData()).slice(0, size);
                PerfClient.Counter<Void> done = new PerfClient.Counter<>();
                long posted = 0;
                long warmUp = count / 2;   // untimed: the JIT's warm-up (and, on shm, mapping the region)
                long t = 0;
                while (done.completed < warmUp + count) {
                    if (t == 0 && done.completed >= warmUp) {
                        t = System.nanoTime();
                    }
                    while (posted < warmUp + count && posted - done.completed < WINDOW) {
                        c.write(src, peer, null, done);
                        posted++;
                    }
                    rdma.poll();
                }
                long ns = System.nanoTime() - t;
                return (double) size * count / (ns / 1e9);
            }
        }
    }
}
