package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.RdmaException;

import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The server end of {@code jrdma perf}: serves one client, all its sizes, then returns. It
 * polls on its own thread (INLINE, POLLING), as perftest's server busy-polls: it answers the
 * ping-pong tests (write_lat, send_lat), takes send_bw's messages, and for the one-sided tests
 * keeps its end going (on tcp its polling is what applies the client's operations).
 */
final class PerfServer implements AutoCloseable {
    /** The biggest region a client may target: -a's largest size. */
    static final int REGION = 1 << 23;
    /** Receives kept posted for the control messages, and the fewest for send_bw. */
    static final int RECEIVE_DEPTH = 64;
    /** perftest's receive depth for send_bw (its rx_depth default): its client keeps 128 in flight. */
    static final int SEND_BW_RECEIVE_DEPTH = 512;
    /** What send_bw's receive buffers may take in all. */
    static final long SEND_BW_RECEIVE_BYTES = 64L << 20;

    /**
     * Receives this server keeps posted: for send_bw as many as perftest's server (512) while
     * they take at most 64 MiB, so that the receives consumed while the server's thread catches
     * up do not leave a sender to meet RNR waits; {@link #RECEIVE_DEPTH} otherwise.
     */
    static int receiveDepth(PerfOptions o) {
        if (o.test() != PerfTest.SEND_BW) {
            return RECEIVE_DEPTH;
        }
        long fit = SEND_BW_RECEIVE_BYTES / Math.max(64, o.maxSize());
        return (int) Math.max(RECEIVE_DEPTH, Math.min(SEND_BW_RECEIVE_DEPTH, fit));
    }

    private final PerfOptions options;
    private final Rdma rdma;
    private final LocalRegion mine;
    private final LocalRegion out;
    private final LocalRegion control;
    private final RdmaServer listener;
    private final AtomicReference<Connection> accepted = new AtomicReference<>();

    PerfServer(PerfOptions o) {
        this.options = o;
        this.rdma = o.open();
        try {
            this.mine = rdma.allocate(REGION);
            this.out = rdma.allocate(REGION);
            this.control = rdma.allocate(PerfControl.BYTES);
            this.listener = rdma.listen(address(o, rdma), o.connectionConfig(rdma, mine, receiveDepth(o)), accepted::set);
        } catch (RuntimeException e) {
            rdma.close();
            throw e;
        }
    }

    /**
     * Where to listen: --bind; else -x's GID address; else, with --loopback, loopback, or on verbs
     * (where 127.0.0.1 has no RDMA device) the device's first RoCE v2 IPv4 address; else all.
     */
    private static InetSocketAddress address(PerfOptions o, Rdma rdma) {
        boolean verbs = rdma.providerName().equals("verbs");
        if (o.gidIndex() >= 0 && !verbs) {
            throw new IllegalArgumentException("-x " + o.gidIndex() + " names a GID of an RDMA device, but this run's provider is "
                    + rdma.providerName() + " (" + rdma.providerChoice() + ")");
        }
        InetAddress gid = gidAddress(o, rdma.deviceName());
        if (o.bind() != null) {
            return new InetSocketAddress(bindAddress(o), o.port());
        }
        if (gid != null) {
            return new InetSocketAddress(gid, o.port());
        }
        if (o.loopback()) {
            return new InetSocketAddress(verbs ? GidAddresses.firstIpv4(rdma.deviceName()) : InetAddress.getLoopbackAddress(),
                    o.port());
        }
        return new InetSocketAddress(o.port());
    }

    /**
     * -x's GID address of {@code device} (null without -x), checked against --bind: what --loopback
     * checks before it starts its server process, so that a wrong -x fails at once and in this one.
     */
    static InetAddress gidAddress(PerfOptions o, String device) {
        InetAddress gid = o.gidIndex() >= 0 ? GidAddresses.of(device, o.gidIndex()) : null;
        if (gid != null && o.bind() != null && !gid.equals(bindAddress(o))) {
            throw new IllegalArgumentException("--bind " + o.bind() + " and -x " + o.gidIndex() + " disagree: GID "
                    + o.gidIndex() + " of " + (device != null ? device : "the first device") + " is " + gid.getHostAddress());
        }
        return gid;
    }

    private static InetAddress bindAddress(PerfOptions o) {
        try {
            return InetAddress.getByName(o.bind());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("--bind " + o.bind() + ": unknown host", e);
        }
    }

    /** Where it listens (the port is the one chosen when -p 0). */
    InetSocketAddress address() {
        return listener.address();
    }

    static final long ACCEPT_SLEEP_MAX_NANOS = 5_000_000;

    /** Serves one client until it says BYE; returns how many sizes it ran. */
    int serve() {
        long deadline = System.nanoTime() + PerfControl.TIMEOUT_NANOS * 10;
        // Waiting for a client is not timed: sleep between looks (at most 5 ms, the handshake
        // takes a few), leaving the CPU to a client that may be starting on the same one.
        IdleBackoff backoff = new IdleBackoff(ACCEPT_SLEEP_MAX_NANOS);
        while (accepted.get() == null) {
            if (PerfControl.poll(rdma) == 0) {
                backoff.idle();
            } else {
                backoff.reset();
            }
            if (System.nanoTime() > deadline) {
                throw new RdmaException("no client connected to " + address() + " within 10 minutes");
            }
        }
        Connection c = accepted.get();
        try (DatagramRuns.Server ud = options.datagrams() ? new DatagramRuns.Server(rdma, c, out) : null) {
            return serve(c, ud);
        }
    }

    /** The runs of client {@code c}; with {@code ud} (-c UD) its sends come as datagrams. */
    private int serve(Connection c, DatagramRuns.Server ud) {
        RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
        int sizes = 0;
        while (true) {
            int[] start;
            try {
                start = PerfControl.expect(rdma, c, PerfControl.START);
            } catch (RdmaException e) {
                if (sizes > 0 && c.state() != ConnectionState.ESTABLISHED) {
                    return sizes;   // the client closed after its last size, its BYE unseen: the run is over
                }
                throw e;
            }
            if (start[0] == PerfControl.BYE) {
                return sizes;
            }
            int ordinal = start[1] & ~PerfControl.DATAGRAMS;
            if (ordinal < 0 || ordinal >= PerfTest.values().length) {
                throw new RdmaException("the client asked for test " + ordinal + ", which this server does not know");
            }
            PerfTest test = PerfTest.values()[ordinal];
            if (((start[1] & PerfControl.DATAGRAMS) != 0) != (ud != null)) {
                throw new RdmaException("the client runs " + ((start[1] & PerfControl.DATAGRAMS) != 0 ? "-c UD" : "-c RC")
                        + ", this server " + (ud != null ? "-c UD" : "-c RC") + ": give both ends the same -c");
            }
            if (test != options.test()) {
                throw new RdmaException("the client runs " + test.perftestName() + ", this server "
                        + options.test().perftestName() + ": run the same test on both ends");
            }
            int size = start[2], iterations = start[3];
            // A ping-pong's marks start again at 1 in every run: forget the last one seen here, or
            // a run after one whose last mark was 1 would take it for the client's first.
            mine.segment().set(ValueLayout.JAVA_BYTE, size - 1, (byte) 0);
            if (ud != null) {
                ud.start(test, size);   // its datagrams are answered or counted while this side waits for END
            }
            PerfControl.send(rdma, c, control, PerfControl.READY, ud != null ? ud.port() : 0, 0, 0);
            if (ud == null) {
                switch (test) {
                    case WRITE_LAT -> writePingPong(c, peer, size, iterations);
                    case SEND_LAT -> sendPingPong(c, size, iterations);
                    case SEND_BW -> {
                        for (int i = 0; i < iterations; i++) {
                            PerfControl.next(rdma, c).close();
                        }
                    }
                    default -> { }   // one-sided: nothing of ours, polling serves them (tcp)
                }
            }
            // The client's run may be long. One-sided tests need nothing of this side but on tcp,
            // where this side's polling applies them: elsewhere it sleeps between looks.
            boolean oneSided = test != PerfTest.WRITE_LAT && test != PerfTest.SEND_LAT && test != PerfTest.SEND_BW;
            int[] end = PerfControl.expect(rdma, c, PerfControl.END, Long.MAX_VALUE, oneSided && !rdma.providerName().equals("tcp"));
            if (ud != null) {
                ud.awaitStragglers(rdma, end[1]);   // END may overtake datagrams still on their way or not yet polled
            }
            PerfControl.send(rdma, c, control, PerfControl.ENDED, ud != null ? (int) Math.min(Integer.MAX_VALUE, ud.received()) : 0, 0, 0);
            sizes++;
        }
    }

    /** The byte both ends of write_lat poll for: the iteration's mark, never 0 (the region starts zeroed). */
    static byte mark(int i) {
        return (byte) (i % 127 + 1);
    }

    private void writePingPong(Connection c, RemoteRegion peer, int size, int iterations) {
        LocalRegion src = out.slice(0, size);
        RemoteRegion dst = peer.slice(0, size);
        int spinsPerPoll = JrdmaLoopback.spinsPerPoll(rdma.providerName());
        PerfClient.Counter<Void> done = new PerfClient.Counter<>();
        for (int i = 0; i < iterations; i++) {
            pong(c, src, dst, size - 1, mark(i), spinsPerPoll, done);
        }
        PerfClient.drain(rdma, c, done, iterations);
    }

    /**
     * One round trip of write_lat: waits for mark {@code m}, writes it back. A method of its own,
     * for the JIT (as PerfClient's LatencyStep): each run enters its loop afresh.
     */
    private void pong(Connection c, LocalRegion src, RemoteRegion dst, int at, byte m, int spinsPerPoll,
                      PerfClient.Counter<Void> done) {
        awaitMark(c, at, m, spinsPerPoll);
        out.segment().set(ValueLayout.JAVA_BYTE, at, m);
        c.write(src, dst, null, done);
        PerfControl.poll(rdma);
    }

    private void awaitMark(Connection c, long at, byte m, int spinsPerPoll) {
        var seg = mine.segment();
        IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
        int spins = 0;
        while ((byte) ValueLayout.JAVA_BYTE.varHandle().getVolatile(seg, at) != m) {
            JrdmaLoopback.spinPause(spinsPerPoll);
            if ((++spins & (spinsPerPoll - 1)) == 0 && PerfControl.poll(rdma) == 0 && (c.state() != ConnectionState.ESTABLISHED
                    || idle.expired())) {
                throw new RdmaException("write_lat: the client stopped (" + c.state() + ")");
            }
        }
    }

    /** Answers each of the client's sends with one, from the receive callback (no future per message). */
    private void sendPingPong(Connection c, int size, int iterations) {
        LocalRegion src = out.slice(0, size);
        PerfClient.Counter<Void> done = new PerfClient.Counter<>();
        PerfClient.Counter<Void> got = new PerfClient.Counter<>();
        c.onReceive((conn, m) -> {
            got.completed++;
            conn.send(src, null, done);
        });
        try {
            PerfClient.drain(rdma, c, got, iterations);
        } finally {
            c.onReceive(null);   // the END that follows is a control message, for receive()
        }
        PerfClient.drain(rdma, c, done, iterations);
    }

    @Override
    public void close() {
        rdma.close();
    }
}
