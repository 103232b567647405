package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

/**
 * jrdma's shm 8-byte write ping-pong and its floor, two JVMs spinning on flags in one mapping,
 * measured between the same two processes in alternating blocks; jrdma's both ways, every write
 * completing (ALWAYS) and writes that report only a failure (ON_ERROR, as UCX's put_lat puts). On this machine's two vCPUs
 * the round trip of even the raw ping-pong moves between about 0.1 and 0.45 us from one run to
 * the next (where the hypervisor puts the vCPUs), so a floor measured by other processes at
 * another moment is not a floor; blocks a few ms apart in the same processes are. The ratio is
 * taken per pair of neighbouring blocks, then the median over pairs.
 *
 * <p>Each side runs one spinning thread (INLINE mode). The jrdma loop is ib_write_lat's: the
 * client writes the iteration number into the server's region, polls once for the write's
 * completion, and spins on its own region until the server has written it back (see
 * {@link JrdmaLoopback#spinsPerPoll}). The raw loop is {@link RawShmPingPong}'s. A block's
 * round trip is its time over its iterations, as ucx_perftest measures: no clock is read inside
 * the loop (a read costs about as much as a tenth of the raw round trip).
 */
final class PairedShmPingPong {
    /**
     * Iterations per block, blocks in all, and blocks of warm-up. Blocks come in fours: jrdma
     * with every write completing (ALWAYS), raw, jrdma with {@link dev.jrdma.Completion#ON_ERROR}
     * writes, raw; so each jrdma block has a raw one right after it.
     */
    static final int BLOCK = 50_000, BLOCKS = 80, WARM_UP_BLOCKS = 20;
    /** What a block runs: {@code b % 4}. */
    static final int ALWAYS = 0, RAW = 1, ON_ERROR = 2;

    private PairedShmPingPong() {
    }

    private static int kind(int b) {
        int k = b & 3;
        return k == 3 ? RAW : k;
    }

    /** A library without ON_ERROR (an older commit under scripts/bench-software-providers-ab) runs ALWAYS in its place. */
    private static final boolean HAS_ON_ERROR = hasOnError();

    private static boolean hasOnError() {
        try {
            Class.forName("dev.jrdma.Completion");
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** Writes {@code out} to {@code peer}: ALWAYS with a handler (and a poll for its completion), or ON_ERROR. */
    private static void write(Rdma rdma, Connection c, LocalRegion out, RemoteRegion peer, PerfClient.Counter<Void> done,
                              int kind) {
        if (kind == ON_ERROR && HAS_ON_ERROR) {
            OnErrorWrite.post(c, out, peer);   // nothing to poll for: it reports only a failure
        } else {
            c.write(out, peer, null, done);
            rdma.poll();
        }
    }

    /** Kept apart so that the ping-pong's class links against a library without {@code Completion}. */
    private static final class OnErrorWrite {
        static void post(Connection c, LocalRegion out, RemoteRegion peer) {
            c.write(out, peer, null, null, dev.jrdma.Completion.ON_ERROR);
        }
    }

    /** The server role: prints "ready PORT", then answers every block of one client. */
    static void serve(Path flags) throws Exception {
        try (Arena arena = Arena.ofShared();
             Rdma rdma = JrdmaLoopback.inlinePolling("shm");
             LocalRegion mine = rdma.allocate(8);
             LocalRegion out = rdma.allocate(8)) {
            MemorySegment raw = RawShmPingPong.map(flags, arena);
            AtomicReference<Connection> accepted = new AtomicReference<>();
            try (RdmaServer server = JrdmaLoopback.listenAndAnnounce(rdma, mine, accepted)) {
                Connection c = JrdmaLoopback.awaitAccepted(rdma, accepted, true);
                RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
                PerfClient.Counter<Void> done = new PerfClient.Counter<>();
                int spinsPerPoll = JrdmaLoopback.spinsPerPoll("shm");
                long v = 0;
                for (int b = 0; b < BLOCKS; b++) {
                    int kind = kind(b);
                    for (int i = 0; i < BLOCK; i++) {
                        v++;
                        if (kind != RAW) {
                            if (!JrdmaLoopback.awaitValue(rdma, c, mine, v, spinsPerPoll)) {
                                return;   // the client is gone
                            }
                            out.segment().set(ValueLayout.JAVA_LONG, 0, v);
                            write(rdma, c, out, peer, done, kind);
                        } else {
                            RawShmPingPong.pong(raw, v);
                        }
                    }
                }
                while (c.state() == ConnectionState.ESTABLISHED) {
                    rdma.poll();
                }
            }
        }
    }

    /**
     * The client role: the round trip in ns of each block after the warm-up, in block order
     * (fours: ALWAYS, raw, ON_ERROR, raw).
     */
    static long[] pingPong(int port, Path flags) throws Exception {
        try (Arena arena = Arena.ofShared();
             Rdma rdma = JrdmaLoopback.inlinePolling("shm");
             LocalRegion mine = rdma.allocate(8);
             LocalRegion out = rdma.allocate(8)) {
            MemorySegment raw = RawShmPingPong.map(flags, arena);
            ConnectionConfig config = ConnectionConfig.builder().privateData(mine.toRemote().toDescriptor()).build();
            try (Connection c = rdma.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), config)) {
                RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
                PerfClient.Counter<Void> done = new PerfClient.Counter<>();
                int spinsPerPoll = JrdmaLoopback.spinsPerPoll("shm");
                long[] blocks = new long[BLOCKS - WARM_UP_BLOCKS];
                long v = 0;
                long always = 0;
                for (int b = 0; b < BLOCKS; b++) {
                    int kind = kind(b);
                    long t = System.nanoTime();
                    for (int i = 0; i < BLOCK; i++) {
                        v++;
                        if (kind != RAW) {
                            out.segment().set(ValueLayout.JAVA_LONG, 0, v);
                            write(rdma, c, out, peer, done, kind);
                            JrdmaLoopback.awaitValue(rdma, c, mine, v, spinsPerPoll);
                        } else {
                            RawShmPingPong.ping(raw, v);
                        }
                    }
                    if (b >= WARM_UP_BLOCKS) {
                        blocks[b - WARM_UP_BLOCKS] = (System.nanoTime() - t) / BLOCK;
                    }
                    if (kind == ALWAYS || (kind == ON_ERROR && !HAS_ON_ERROR)) {
                        always += BLOCK;
                    }
                }
                while (done.completed < always) {
                    rdma.poll();
                }
                return blocks;
            }
        } finally {
            Files.deleteIfExists(flags);
        }
    }

    /** The median over fours of (the {@code kind} block / the raw block right after it). */
    static double pairedRatio(long[] blocks, int kind) {
        double[] r = new double[blocks.length / 4];
        for (int k = 0; k < r.length; k++) {
            r[k] = (double) blocks[4 * k + kind] / blocks[4 * k + kind + 1];
        }
        Arrays.sort(r);
        return r[r.length / 2];
    }

    /** The median round trip, in ns, of the blocks of {@code kind} (RAW: every raw block). */
    static double median(long[] blocks, int kind) {
        long[] m = new long[kind == RAW ? blocks.length / 2 : blocks.length / 4];
        for (int k = 0; k < m.length; k++) {
            m[k] = kind == RAW ? blocks[2 * k + 1] : blocks[4 * k + kind];
        }
        Arrays.sort(m);
        return m[m.length / 2];
    }
}
