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
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

/**
 * jrdma's shm 8-byte write ping-pong and its floor, two JVMs spinning on flags in one mapping,
 * measured between the same two processes in alternating blocks. On this machine's two vCPUs
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
    /** Iterations per block, blocks in all (alternating, jrdma first), and blocks of warm-up. */
    static final int BLOCK = 50_000, BLOCKS = 60, WARM_UP_BLOCKS = 20;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private PairedShmPingPong() {
    }

    private static boolean jrdmaBlock(int b) {
        return (b & 1) == 0;
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
                    for (int i = 0; i < BLOCK; i++) {
                        v++;
                        if (jrdmaBlock(b)) {
                            if (!JrdmaLoopback.awaitValue(rdma, c, mine, v, spinsPerPoll)) {
                                return;   // the client is gone
                            }
                            out.segment().set(ValueLayout.JAVA_LONG, 0, v);
                            c.write(out, peer, null, done);
                            rdma.poll();
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
     * The client role: the round trip in ns of each block after the warm-up, in pairs: element
     * 2k is a jrdma block's, 2k + 1 the raw block's after it.
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
                long[] medians = new long[BLOCKS - WARM_UP_BLOCKS];
                long v = 0;
                for (int b = 0; b < BLOCKS; b++) {
                    long t = System.nanoTime();
                    for (int i = 0; i < BLOCK; i++) {
                        v++;
                        if (jrdmaBlock(b)) {
                            out.segment().set(ValueLayout.JAVA_LONG, 0, v);
                            c.write(out, peer, null, done);
                            rdma.poll();
                            JrdmaLoopback.awaitValue(rdma, c, mine, v, spinsPerPoll);
                        } else {
                            RawShmPingPong.ping(raw, v);
                        }
                    }
                    if (b >= WARM_UP_BLOCKS) {
                        medians[b - WARM_UP_BLOCKS] = (System.nanoTime() - t) / BLOCK;
                    }
                }
                long writes = (long) BLOCK * (BLOCKS / 2);
                while (done.completed < writes) {
                    rdma.poll();
                }
                return medians;
            }
        } finally {
            Files.deleteIfExists(flags);
        }
    }

    /** The median over pairs of (jrdma block / raw block). */
    static double pairedRatio(long[] medians) {
        double[] r = new double[medians.length / 2];
        for (int k = 0; k < r.length; k++) {
            r[k] = (double) medians[2 * k] / medians[2 * k + 1];
        }
        Arrays.sort(r);
        return r[r.length / 2];
    }

    /** The median of the jrdma ({@code odd} false) or raw ({@code odd} true) blocks' round trips, in ns. */
    static double median(long[] medians, boolean odd) {
        long[] m = new long[medians.length / 2];
        for (int k = 0; k < m.length; k++) {
            m[k] = medians[2 * k + (odd ? 1 : 0)];
        }
        Arrays.sort(m);
        return m[m.length / 2];
    }
}
