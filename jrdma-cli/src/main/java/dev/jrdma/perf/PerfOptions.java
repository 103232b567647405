package dev.jrdma.perf;

import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.util.ArrayList;
import java.util.List;

/**
 * The options of {@code jrdma perf}, spelled as perftest spells them where it has them.
 *
 * @param test       the test
 * @param host       the server to connect to; null: be the server
 * @param port       -p, the server's port (perftest's default 18515)
 * @param device     -d, the device (null: the provider's choice)
 * @param provider   --provider: auto, verbs, tcp, shm
 * @param sizes      -s (one size) or -a (2 B .. 8 MiB by powers of 2; atomics: 8 only)
 * @param iterations -n per size
 * @param txDepth    -t, operations kept outstanding by the bw tests
 * @param loopback   --loopback: server and client in this one command
 * @param format     text (perftest's table), json or csv
 * @param bind       --bind, the address the server listens on (default: all, or loopback with --loopback)
 * @param gidIndex   -x, a GID index of the device (-1: none): the server listens on its address
 * @param plot       --plot, a PNG file the client draws its results into (null: none)
 * @param warmUp     --warmup, untimed iterations before each size (-1: as many as -n, at most 10 000)
 * @param ackTimeout -u, the QP's ack timeout exponent on verbs (perftest's default 14: 67 ms; -1 for
 *                   {@code -u cm}: the connection manager's, the library's default)
 * @param outReads   -o, RDMA reads / atomics in flight at the device (-1: the device maximum)
 * @param postList   -l, bandwidth tests: operations posted together as one {@link dev.jrdma.Batch}
 *                   (one doorbell, one completion for all); 1, the default, posts each alone
 * @param loopbackServer --loopback-server (not in the usage: --loopback starts it): the server
 *                   of a loopback run, in its own process, listening where --loopback's would
 * @param jfr        --jfr, a file this process records a JDK Flight Recorder recording into (null: none)
 * @param useSrq     --use-srq (perftest's): each end receives in a shared receive queue of its
 *                   receive depth instead of its connection's own receives
 * @param datagrams  -c UD (perftest's connection type): send_lat and send_bw over datagram
 *                   endpoints ({@link DatagramRuns}) instead of the RC connection, which then
 *                   only carries the control messages; -c RC (the default): the connection
 * @param events     -e (perftest's): each end sleeps on completion events when it finds nothing to
 *                   do (an {@link Rdma.Builder#ioLoops IO loop} this thread drives, {@link
 *                   dev.jrdma.IoLoop#awaitWork}) instead of busy-polling
 */
public record PerfOptions(PerfTest test, String host, int port, String device, String provider, List<Integer> sizes,
                          int iterations, int txDepth, boolean loopback, String format, String bind, int gidIndex,
                          String plot, int warmUp, int ackTimeout, int outReads,
                          int postList, boolean loopbackServer, String jfr, boolean useSrq, boolean datagrams,
                          boolean events) {

    /** perftest's -u default: 4.096 µs × 2<sup>14</sup>, 67 ms. */
    static final int DEFAULT_ACK_TIMEOUT = 14;
    /**
     * The RNR timer both ends ask for, perftest's (12: 0.64 ms; it has no flag for it). rdma_cm's
     * own is 655 ms: one send that finds no receive posted would stall a run for that long.
     */
    static final int MIN_RNR_TIMER = 12;

    static final String USAGE = """
            usage: jrdma perf TEST [options] [SERVER]
                   jrdma perf --help
              TEST: write_lat read_lat send_lat atomic_lat write_bw read_bw send_bw atomic_bw
              no SERVER: be the server; with SERVER: the client; --loopback: both, in this command
              -d, --ib-dev NAME      device (default: the provider's choice)
              -p, --port N           server port (default 18515)
              -s, --size BYTES       message size (default 2 for latency, 65536 for bandwidth, 8 for atomics)
              -a, --all              every size from 2 B to 8 MiB (send: to 1 MiB; atomics: 8 B)
              -n, --iters N          iterations per size (default 1000 for latency, 5000 for bandwidth)
              -t, --tx-depth N       operations in flight in bw tests (default 128)
              -x, --gid-index N      GID index (verbs): the server listens on that GID's IP address, as
                                     rdma_cm picks the GID from the address (a client's follows its route)
              -u, --qp-timeout N     verbs: ack timeout 4.096 us x 2^N before a request is sent again
                                     (1-31, default 14 as perftest; rdma_cm's own on RoCE: 19, 2.1 s);
                                     -u cm: rdma_cm's, as the library's default ConnectionConfig has
              -o, --outs N           read and atomic tests: reads/atomics in flight at the device
                                     (default: the device maximum, as perftest)
              -l, --post_list N      bw tests: post N operations at a time as one jrdma Batch (one
                                     doorbell, one completion for the N; perftest's -l, which also
                                     sets its -Q to N). Default 1: each operation alone, completing alone
              --provider NAME        auto (default), verbs, tcp or shm
              --loopback             run server and client from this command (the server in a process
                                     of its own, on 127.0.0.1 or the device's address)
              --bind ADDRESS         the server's address (default: all; with --loopback 127.0.0.1, or on
                                     verbs the device's first RoCE v2 IPv4 address)
              --use-srq              receive in a shared receive queue (Rdma.sharedReceiveQueue) of the
                                     receive depth, on each end, as perftest's --use-srq
              -c, --connection TYPE  RC (default: the connection) or UD: send_lat and send_bw as
                                     datagrams (Rdma.datagramEndpoint) of at most the path MTU, as
                                     perftest's -c UD; the connection carries only the control messages
              -e, --events           sleep on completion events when idle instead of busy-polling, on both
                                     ends (perftest's -e; not for write_lat, which waits on memory)
              --json | --csv         machine-readable output instead of the table
              --plot FILE.png        also draw the results: latency percentiles or bandwidth, by size
              --jfr FILE.jfr         record this process in a JDK Flight Recorder file: the JVM's default
                                     events and jrdma's (connections, regions, retries, and every 64th
                                     operation's latency); open it with `jfr print` or JDK Mission Control
              --warmup N             N untimed iterations before each size (default: untimed rounds until
                                     the figure holds within 5% with the JIT idle, at most 60 s; the
                                     header says how long that took)
            """;

    /**
     * The largest datagram -c UD sends with -a (perftest's UD tests stop at the MTU, 4096 at most);
     * a run skips the sizes above its endpoint's {@link dev.jrdma.DatagramEndpoint#maxMessageSize()}.
     */
    static final int UD_MAX = 4096;

    /** The largest message the send tests use with -a: every receive buffer is this big. */
    static final int SEND_MAX = 1 << 20;

    /** Parses {@code args}; throws IllegalArgumentException naming what is wrong. */
    static PerfOptions parse(String[] args) {
        if (args.length == 0) {
            throw new IllegalArgumentException("which test? " + "(write_lat, read_lat, ...)");
        }
        PerfTest test = PerfTest.of(args[0]);
        String host = null, device = null, provider = "auto", format = "text", bind = null, plot = null, jfr = null;
        int port = 18515, size = -1, iterations = -1, txDepth = 128, gidIndex = -1, warmUp = -1,
                ackTimeout = DEFAULT_ACK_TIMEOUT, outReads = -1, postList = 1;
        boolean all = false, loopback = false, loopbackServer = false, useSrq = false, datagrams = false, events = false;
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-d", "--ib-dev" -> device = value(args, ++i, a);
                case "-p", "--port" -> port = number(args, ++i, a, 0, 65535);
                case "-s", "--size" -> size = number(args, ++i, a, 1, Integer.MAX_VALUE);
                case "-a", "--all" -> all = true;
                case "-n", "--iters" -> iterations = number(args, ++i, a, 1, 100_000_000);
                case "-t", "--tx-depth" -> txDepth = number(args, ++i, a, 1, 8192);
                case "--provider" -> provider = value(args, ++i, a);
                case "--loopback" -> loopback = true;
                case "--loopback-server" -> loopbackServer = true;
                case "--use-srq", "--use_srq" -> useSrq = true;   // perftest spells it --use-srq
                case "-e", "--events" -> events = true;
                case "-c", "--connection" -> datagrams = switch (value(args, ++i, a)) {
                    case "RC" -> false;
                    case "UD" -> true;
                    default -> throw new IllegalArgumentException(a + " " + args[i] + ": jrdma perf runs RC (connections) and"
                            + " UD (datagrams); not XRC, UC, DC or SRD");
                };
                case "--bind" -> bind = value(args, ++i, a);
                case "-x", "--gid-index" -> gidIndex = number(args, ++i, a, 0, 255);
                case "--plot" -> plot = value(args, ++i, a);
                case "--jfr" -> jfr = value(args, ++i, a);
                case "-u", "--qp-timeout" -> {
                    if (i + 1 < args.length && args[i + 1].equals("cm")) {
                        i++;
                        ackTimeout = -1;   // the connection manager's, as ConnectionConfig's default
                    } else if (!value(args, i + 1, a).matches("-?\\d+")) {
                        throw new IllegalArgumentException(a + " takes 1..31 or cm, not '" + args[i + 1] + "'");
                    } else {
                        ackTimeout = number(args, ++i, a, 1, 31);
                    }
                }
                case "-o", "--outs" -> outReads = number(args, ++i, a, 1, 255);
                case "-l", "--post_list" -> postList = number(args, ++i, a, 1, 8192);
                case "--warmup" -> warmUp = number(args, ++i, a, 0, 100_000_000);
                case "--json" -> format = "json";
                case "--csv" -> format = "csv";
                default -> {
                    if (a.startsWith("-")) {
                        throw new IllegalArgumentException("unknown option " + a);
                    }
                    if (host != null) {
                        throw new IllegalArgumentException("one server address, not '" + host + "' and '" + a + "'");
                    }
                    host = a;
                }
            }
        }
        if (loopback && host != null) {
            throw new IllegalArgumentException("--loopback runs both ends here: no server address (" + host + ")");
        }
        if (outReads > 0 && test != PerfTest.READ_LAT && test != PerfTest.READ_BW && !test.atomic()) {
            throw new IllegalArgumentException("-o (outstanding reads) is for the read and atomic tests, not "
                    + test.perftestName());
        }
        if (postList > 1 && test.latency()) {
            throw new IllegalArgumentException("-l (post list) is for the bandwidth tests, not " + test.perftestName());
        }
        if (postList > txDepth) {
            throw new IllegalArgumentException("-l " + postList + " is more than -t " + txDepth
                    + " allows in flight: a batch is posted whole");
        }
        if (datagrams && !test.send()) {
            throw new IllegalArgumentException("-c UD carries sends only: send_lat or send_bw, not " + test.perftestName());
        }
        if (datagrams && (useSrq || postList > 1)) {
            throw new IllegalArgumentException("-c UD: " + (useSrq ? "--use-srq" : "-l") + " is for RC connections");
        }
        if (datagrams && size > UD_MAX) {
            throw new IllegalArgumentException("-c UD sends at most a path MTU (" + UD_MAX + " bytes at most), not " + size);
        }
        if (events && test == PerfTest.WRITE_LAT) {
            throw new IllegalArgumentException("-e: write_lat waits for the peer's write in memory, where no completion"
                    + " comes (perftest refuses it too)");
        }
        if (events && datagrams) {
            throw new IllegalArgumentException("-e is for RC connections, not -c UD");
        }
        if (all && size > 0) {
            throw new IllegalArgumentException("-a and -s " + size + " together: one or the other");
        }
        if (test.atomic() && size > 0 && size != 8) {
            throw new IllegalArgumentException(test.perftestName() + " moves 8 bytes, not " + size + " (-s)");
        }
        if (test.send() && size > SEND_MAX) {
            throw new IllegalArgumentException(test.perftestName() + " sends at most " + SEND_MAX + " bytes (every receive"
                    + " buffer is that big), not " + size);
        }
        List<Integer> sizes = new ArrayList<>();
        if (test.atomic()) {
            sizes.add(8);
        } else if (all) {
            for (int s = 2; s <= (datagrams ? UD_MAX : test.send() ? SEND_MAX : 1 << 23); s <<= 1) {
                sizes.add(s);
            }
        } else {
            sizes.add(size > 0 ? size : test.latency() ? 2 : 65536);
        }
        if (iterations < 0) {
            iterations = test.latency() ? 1000 : 5000;
        }
        if (plot != null && !plot.toLowerCase(java.util.Locale.ROOT).endsWith(".png")) {
            throw new IllegalArgumentException("--plot writes a PNG: give a file name ending in .png, not '" + plot + "'");
        }
        if (plot != null && host == null && !loopback) {
            throw new IllegalArgumentException("--plot is the client's (it has the results): give it with SERVER or --loopback");
        }
        if (jfr != null && !jfr.toLowerCase(java.util.Locale.ROOT).endsWith(".jfr")) {
            throw new IllegalArgumentException("--jfr writes a Flight Recorder file: give a name ending in .jfr, not '" + jfr + "'");
        }
        if (loopbackServer && (loopback || host != null)) {
            throw new IllegalArgumentException("--loopback-server is the server of a --loopback run: no SERVER, no --loopback");
        }
        return new PerfOptions(test, host, port, device, provider, List.copyOf(sizes), iterations, txDepth,
                loopback || loopbackServer, format, bind, gidIndex, plot, warmUp, ackTimeout, outReads, postList, loopbackServer,
                jfr, useSrq, datagrams, events);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static int number(String[] args, int i, String option, int min, int max) {
        String v = value(args, i, option);
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a number, not '" + v + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(option + " must be in " + min + ".." + max + ", not " + n);
        }
        return n;
    }

    /**
     * The Rdma each end of a run builds: polled on its own thread (INLINE, single-threaded), or
     * with -e one IO loop that thread drives and sleeps on ({@link PerfControl#poll}), bound to it here.
     */
    Rdma open() {
        Rdma.Builder b = Rdma.builder().provider(provider);
        if (events) {
            b.completionMode(dev.jrdma.CompletionMode.EVENT).ioLoops(1);
        } else {
            b.completionMode(dev.jrdma.CompletionMode.POLLING).ioThreads(Rdma.INLINE)
                    .singleThreaded(true);   // this thread builds, polls and posts: no lock on the operation path
        }
        if (device != null) {
            b.device(device);
        }
        Rdma rdma = b.build();
        if (events) {
            rdma.ioLoop(0).bind();   // this thread drives it: PerfControl.poll polls and sleeps on it
        }
        return rdma;
    }

    /** How long a --loopback connect waits for the server process it started. */
    static final java.time.Duration LOOPBACK_CONNECT_TIMEOUT = java.time.Duration.ofSeconds(60);

    /**
     * What both ends connect with: {@code exposed}'s descriptor for the peer, receive buffers for
     * the largest send, {@code receiveDepth} receives, and the QP settings (-u, -o, perftest's RNR timer).
     */
    ConnectionConfig connectionConfig(Rdma rdma, LocalRegion exposed, int receiveDepth) {
        int bufferSize = Math.max(64, test.send() ? maxSize() : 64);
        ConnectionConfig.Builder b = ConnectionConfig.builder().privateData(exposed.toRemote().toDescriptor())
                .receiveBufferSize(bufferSize).receiveQueueDepth(receiveDepth)
                .ackTimeout(ackTimeout).minRnrTimer(MIN_RNR_TIMER).maxRdAtomic(outReads);
        if (useSrq) {
            b.sharedReceiveQueue(rdma.sharedReceiveQueue(receiveDepth, bufferSize));   // closed with the Rdma
        }
        if (loopback || loopbackServer) {
            // The server is a JVM this command has just started: its first accept (the native calls'
            // first linking, a cold JIT) took longer than the default 10 s on an emulated CPU.
            b.timeout(LOOPBACK_CONNECT_TIMEOUT);
        }
        return b.build();
    }

    int maxSize() {
        int m = 8;
        for (int s : sizes) {
            m = Math.max(m, s);
        }
        return m;
    }
}
