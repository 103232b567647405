package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.DatagramAddress;
import dev.jrdma.DatagramEndpoint;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.exceptions.RdmaException;

import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;


/**
 * {@code jrdma perf -c UD}: send_lat and send_bw over {@link DatagramEndpoint}s, as perftest's
 * {@code -c UD} runs them over UD queue pairs. The RC connection stays the control channel: the
 * server's READY carries its endpoint's port, its ENDED how many datagrams it received. A message
 * is at most the endpoint's {@link DatagramEndpoint#maxMessageSize()} (on verbs the path MTU, as
 * perftest's UD tests), and UD does not retransmit: send_bw reports what the client sent, and the
 * server's count says how much of it arrived; send_lat fails naming the datagram that was lost.
 */
final class DatagramRuns {
    /** Receives each endpoint keeps posted: perftest's receive depth for UD send_bw (512). */
    static final int RECEIVES = 512;
    /** How long send_lat waits for an answer before it calls the datagram lost. */
    static final long LOST_NANOS = TimeUnit.SECONDS.toNanos(5);

    private DatagramRuns() {
    }

    /** The server's endpoint: on the address the client connected to, answering (send_lat) or counting (send_bw). */
    static final class Server implements AutoCloseable {
        private final DatagramEndpoint ud;
        private final LocalRegion out;
        private long received;

        Server(Rdma rdma, Connection c, LocalRegion out) {
            this.ud = rdma.datagramEndpoint(new InetSocketAddress(c.localAddress().getAddress(), 0), RECEIVES);
            this.out = out;
        }

        /** For READY: where the client sends. */
        int port() {
            return ud.localAddress().getPort();
        }

        /** Before a run: count from 0, and answer each datagram with {@code size} bytes for send_lat. */
        void start(PerfTest test, int size) {
            received = 0;
            LocalRegion reply = out.slice(0, size);
            if (test == PerfTest.SEND_LAT) {
                ud.onReceive(d -> {
                    received++;
                    DatagramAddress from = d.sender();
                    d.close();
                    ud.send(from, reply);
                });
            } else {
                ud.onReceive(d -> {
                    received++;
                    d.close();
                });
            }
        }

        /** How long the server waits, after END, for the datagrams that have not come when none comes. */
        static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

        /**
         * After END: polls until all {@code sent} datagrams were received or none came for
         * {@link #QUIET_NANOS} (the rest are lost), so that ENDED counts this run's and the next
         * run does not count its stragglers.
         */
        void awaitStragglers(Rdma rdma, long sent) {
            long seen = received, quietSince = System.nanoTime();
            while (received < sent) {
                rdma.poll();
                long now = System.nanoTime();
                if (received != seen) {
                    seen = received;
                    quietSince = now;
                } else if (now - quietSince > QUIET_NANOS) {
                    return;
                }
            }
        }

        /** For ENDED: the datagrams this run received. */
        long received() {
            return received;
        }

        @Override
        public void close() {
            ud.close();
        }
    }

    /** The client's endpoint and the runs it times. */
    static final class Client implements AutoCloseable {
        private final Rdma rdma;
        private final Connection c;
        private final DatagramEndpoint ud;
        private final int window;
        private DatagramAddress server;
        private long replies, sent;
        private Throwable failure;
        /** One handler for every send's end: nothing allocated per datagram. */
        private final CompletionHandler<Void, Object> onSent = new CompletionHandler<>() {
            @Override
            public void completed(Void v, Object a) {
                sent++;
            }

            @Override
            public void failed(Throwable e, Object a) {
                sent++;
                if (failure == null) {
                    failure = e;
                }
            }
        };

        Client(Rdma rdma, Connection c, int window) {
            this.rdma = rdma;
            this.c = c;
            this.window = Math.min(window, 4096);
            // Two slots at least: send_lat does not wait for a send's completion before the next
            // (its answer can come first), so with -t 1 the next send would find the slot taken.
            this.ud = rdma.datagramEndpoint(new InetSocketAddress(c.localAddress().getAddress(), 0), RECEIVES,
                    Math.max(2, this.window));
            ud.onReceive(d -> {
                replies++;
                d.close();
            });
        }

        /** The largest message a datagram carries here. */
        int maxMessageSize() {
            return ud.maxMessageSize();
        }

        /** Resolves the server's endpoint (once) at the port its READY gave. */
        void serverAt(int port) {
            if (server == null) {
                InetSocketAddress at = new InetSocketAddress(c.remoteAddress().getAddress(), port);
                server = PerfControl.await(rdma, c, ud.resolve(at), "resolving the server's datagram endpoint " + at);
            }
        }

        /** send_lat: {@code n} round trips of {@code size} bytes; each one's time into {@code ns}. */
        void latency(LocalRegion src, int n, long[] ns) {
            replies = 0;
            for (int i = 0; i < n; i++) {
                long t = System.nanoTime();
                ud.send(server, src, 0, (int) src.length(), null, onSent);
                while (replies <= i) {
                    if (rdma.poll() == 0) {
                        checkFailure();
                        if (System.nanoTime() - t > LOST_NANOS) {
                            throw new RdmaException("send_lat -c UD: datagram " + i + " or its answer was lost (UD does not"
                                    + " send again); " + replies + " answers came");
                        }
                    }
                }
                ns[i] = System.nanoTime() - t;
            }
            checkFailure();
        }

        /**
         * send_bw: {@code n} datagrams of {@code size} bytes, {@code window} in flight; the time
         * from the first send's completion to the last's, in nanoseconds, and the completions it
         * covers.
         */
        long[] bandwidth(LocalRegion src, int n) {
            sent = 0;
            long posted = 0, start = 0, startCount = 0;
            IdleDeadline idle = new IdleDeadline(PerfControl.TIMEOUT_NANOS);
            while (sent < n) {
                while (posted < n && posted - sent < window) {
                    ud.send(server, src, 0, (int) src.length(), null, onSent);
                    posted++;
                }
                if (rdma.poll() == 0) {
                    checkFailure();
                    if (c.state() != ConnectionState.ESTABLISHED) {
                        throw new RdmaException("the control connection ended during send_bw -c UD (" + c.state() + ")");
                    }
                    if (idle.expired()) {
                        throw new RdmaException("send_bw -c UD: no send completed for 60 s (" + (posted - sent) + " outstanding)");
                    }
                    continue;
                }
                idle.progressed();
                if (start == 0 && sent > 0) {
                    start = System.nanoTime();
                    startCount = sent;
                }
            }
            checkFailure();
            return new long[] {Math.max(1, System.nanoTime() - start), Math.max(1, sent - startCount)};
        }

        private void checkFailure() {
            if (failure != null) {
                throw new RdmaException("a datagram's send failed: " + failure.getMessage(), failure);
            }
        }

        @Override
        public void close() {
            ud.close();
        }
    }
}
