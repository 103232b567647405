package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.DatagramQueuePair;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * A datagram endpoint's life: open from its construction, polled by its IO thread through
 * {@link #source}, which hands each completion to the send or the receive side; then closed, once,
 * by {@link #close}, whose teardown leaves the IO thread, closes the queue pair on the control
 * thread and then fails what was still outstanding and frees the receive buffers.
 *
 * <p>Threads: {@link #closed()} is read from any thread; the flag is set under both sides' locks
 * (receive, then send), so a post or a receive that checks it under its own lock either runs
 * before the close or sees it. The source runs on the endpoint's IO thread, the teardown on the
 * control thread (or the closing thread once the IO thread has stopped).
 */
final class DatagramLife {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    /** How many completions one poll hands on at most. */
    private static final int POLL_BATCH = 32;

    private final DatagramEndpoint endpoint;
    private final Rdma rdma;
    private final IoThread io;
    private final DatagramQueuePair qp;
    private final DatagramCounters counters;
    // Set by parts() in the endpoint's constructor, before the source is added to the IO thread.
    private DatagramSends sends;
    private DatagramReceives receives;
    private volatile boolean closed;

    DatagramLife(DatagramEndpoint endpoint, Rdma rdma, IoThread io, DatagramQueuePair qp, DatagramCounters counters) {
        this.endpoint = endpoint;
        this.rdma = rdma;
        this.io = io;
        this.qp = qp;
        this.counters = counters;
    }

    void parts(DatagramSends sends, DatagramReceives receives) {
        this.sends = sends;
        this.receives = receives;
    }

    /** Where each completion the queue pair polls goes: its wr_id is a send slot or a receive buffer. */
    private final DatagramQueuePair.Sink sink = new DatagramQueuePair.Sink() {
        @Override
        public void onSend(long wrId, int status) {
            sends.completed((int) wrId, status);
        }

        @Override
        public void onReceive(long wrId, int status, int byteLen, int sourceQp) {
            receives.completed((int) wrId, status, byteLen, sourceQp);
        }
    };

    /** What the endpoint's IO thread polls; it polls nothing once the endpoint is closed. */
    private final IoThread.Source source = new IoThread.Source() {
        @Override
        public int poll() {
            return closed ? 0 : qp.poll(sink, POLL_BATCH);
        }

        @Override
        public void arm() {
            if (!closed) {
                qp.arm();
            }
        }

        @Override
        public void failed(Throwable t) {
            counters.pollFailures.incrementAndGet();
            LOG.log(System.Logger.Level.ERROR, "datagram endpoint " + qp.localAddress() + " failed", t);
        }
    };

    /** Has the IO thread poll the endpoint; once its receive buffers are posted. */
    void start() {
        io.execute(() -> io.add(source));
    }

    /** {@return whether {@link #close} has begun} */
    boolean closed() {
        return closed;
    }

    /** {@return the failure of a call on the closed endpoint} */
    ConnectionClosedException closedFailure() {
        return new ConnectionClosedException("datagram endpoint " + qp.localAddress() + " is closed");
    }

    /** Closes the endpoint (see {@link DatagramEndpoint#close()}); idempotent. */
    void close() {
        synchronized (receives.lock) {
            synchronized (sends.lock) {
                if (closed) {
                    return;
                }
                closed = true;
            }
        }
        // The source leaves its IO thread first (nothing polls the queue pair after that), then the
        // queue pair goes on the control thread, whose connection manager owns its rdma_cm ids.
        CompletableFuture<Void> gone = new CompletableFuture<>();
        Runnable teardown = () -> {
            try {
                qp.close();
            } finally {
                try {
                    finishClose();
                } finally {
                    gone.complete(null);
                }
            }
        };
        try {
            // Later, not at once: from a callback this runs inside the queue pair's poll, which
            // must not find its queue pair gone when the callback returns.
            io.executeLater(() -> {
                io.remove(source);
                rdma.io().execute(teardown);
            });
        } catch (IllegalStateException stopped) {
            io.remove(source);   // its thread has stopped: nothing polls it
            teardown.run();
            return;
        }
        if (!rdma.isIoThread()) {   // on an IO thread (a callback) it is torn down after the callback
            rdma.io().await(gone, Duration.ofSeconds(30));
        }
    }

    /** After the queue pair is gone: what it still held fails, and the buffers go back. */
    private void finishClose() {
        ConnectionClosedException why = new ConnectionClosedException("datagram endpoint " + qp.localAddress() + " closed");
        sends.failInFlight(why);
        receives.release(why);
        rdma.live().datagramEndpointClosed(endpoint);
    }
}
