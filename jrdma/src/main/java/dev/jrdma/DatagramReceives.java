package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.os.Errno;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A datagram endpoint's receive side: its receive buffers, one registered region cut into slots
 * of a header (GRH or sockaddr) and a payload of up to the largest datagram, all posted from the
 * start; the delivery of what arrives in them as {@link Datagram}s (to the {@code onReceive}
 * handler, to a waiting {@code receive}, or kept until one asks); and the re-post of a buffer
 * when its datagram is closed. The buffers are freed by the teardown, after the queue pair.
 *
 * <p>Threads: the IO thread completes receives and runs the handler; any thread receives, sets
 * the handler or closes a datagram. {@link #lock} guards the datagrams kept, the waiting
 * receive, the handler's change and the posts to the queue pair (one poster at a time).
 */
final class DatagramReceives {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    /** Guards {@link #ready}, {@link #waiter}, a change of {@link #handler}, and the posts; the close sets the closed flag under it too. */
    final Object lock = new Object();
    private final DatagramEndpoint endpoint;
    private final IoThread io;
    private final DatagramQueuePair qp;
    private final DatagramLife life;
    private final DatagramCounters counters;
    private final LocalRegion buffers;
    /** Each buffer's header and payload area, sliced once: a receive slices only its payload. */
    private final MemorySegment[] headers;
    private final MemorySegment[] payloads;
    private final int bufferCount;
    /** A buffer's bytes: its header and the largest payload, rounded up to 64. */
    private final int slot;
    /** Received, not yet taken by {@link #receive}. */
    private final ArrayDeque<Datagram> ready = new ArrayDeque<>();
    /** The {@link #receive} waiting for the next datagram, or null (one at a time). */
    private CompletableFuture<Datagram> waiter;
    private volatile Consumer<Datagram> handler;

    DatagramReceives(DatagramEndpoint endpoint, Rdma rdma, IoThread io, DatagramQueuePair qp, DatagramLife life,
                     int bufferCount, DatagramCounters counters) {
        this.endpoint = endpoint;
        this.io = io;
        this.qp = qp;
        this.life = life;
        this.counters = counters;
        this.bufferCount = bufferCount;
        int header = qp.headerBytes();
        this.slot = (header + qp.maxMessageSize() + 63) & ~63;
        this.buffers = rdma.allocate((long) slot * bufferCount);
        this.headers = new MemorySegment[bufferCount];
        this.payloads = new MemorySegment[bufferCount];
        for (int i = 0; i < bufferCount; i++) {
            headers[i] = buffers.segment().asSlice((long) i * slot, header);
            payloads[i] = buffers.segment().asSlice((long) i * slot + header, slot - header);
        }
    }

    int bufferCount() {
        return bufferCount;
    }

    /** Posts every buffer, before the endpoint is polled; a failure frees them and throws. */
    void postAll() {
        for (int i = 0; i < bufferCount; i++) {
            int rc;
            synchronized (lock) {
                rc = post(i);
            }
            if (rc != 0) {
                buffers.close();
                throw new RdmaException("posting receive buffer " + i + " of " + bufferCount + " failed: "
                        + Errno.name(rc));
            }
        }
    }

    /** Posts buffer {@code buffer} to the queue pair; under the lock. */
    private int post(int buffer) {
        return qp.postRecv(buffer, buffers.address() + (long) buffer * slot, slot, buffers.lkey());
    }

    /** Buffer {@code buffer} received {@code byteLen} bytes from {@code sourceQp}, or failed; on the IO thread. */
    void completed(int buffer, int status, int byteLen, int sourceQp) {
        if (life.closed()) {
            return;   // closed from an earlier callback of this poll: nothing more is delivered
        }
        if (status != WorkCompletion.SUCCESS || byteLen < 0 || byteLen > qp.maxMessageSize()) {
            counters.receiveErrors.incrementAndGet();
            repost(buffer);
            return;
        }
        counters.received.incrementAndGet();
        Datagram d = new Datagram(endpoint, buffer, headers[buffer], payloads[buffer].asSlice(0, byteLen), sourceQp);
        Consumer<Datagram> h = handler;
        if (h != null) {
            try {
                h.accept(d);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the onReceive handler of " + qp.localAddress() + " threw", e);
                d.close();
            }
            return;
        }
        CompletableFuture<Datagram> w;
        synchronized (lock) {
            w = waiter;
            waiter = null;
            if (w == null) {
                ready.add(d);
                return;
            }
        }
        if (!w.complete(d)) {
            synchronized (lock) {
                ready.addFirst(d);   // the waiter gave up meanwhile
            }
        }
    }

    /** See {@link DatagramEndpoint#onReceive}. */
    void onReceive(Consumer<Datagram> handler) {
        List<Datagram> earlier = new ArrayList<>();
        synchronized (lock) {
            this.handler = handler;
            if (handler != null) {
                earlier.addAll(ready);
                ready.clear();
            }
        }
        if (!earlier.isEmpty()) {
            io.execute(() -> earlier.forEach(d -> {
                try {
                    handler.accept(d);
                } catch (RuntimeException e) {
                    d.close();
                }
            }));
        }
    }

    /** See {@link DatagramEndpoint#receive}; not on an IO thread. */
    Datagram receive(Duration timeout) {
        CompletableFuture<Datagram> f;
        synchronized (lock) {
            if (handler != null) {
                throw new IllegalStateException("receive: an onReceive handler takes this endpoint's datagrams");
            }
            Datagram d = ready.poll();
            if (d != null) {
                return d;
            }
            if (life.closed()) {
                throw life.closedFailure();
            }
            if (waiter != null) {
                throw new IllegalStateException("receive: another thread is waiting on this endpoint");
            }
            f = new CompletableFuture<>();
            waiter = f;
        }
        try {
            return io.await(f, timeout.toNanos());
        } catch (TimeoutException e) {
            synchronized (lock) {
                if (waiter == f) {
                    waiter = null;
                }
            }
            Datagram late = f.getNow(null);
            if (late != null) {
                return late;
            }
            throw new RdmaTimeoutException("no datagram reached " + qp.localAddress() + " within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while waiting for a datagram");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    /** Posts buffer {@code buffer} again, its datagram closed; nothing once the endpoint is closed. */
    void repost(int buffer) {
        if (life.closed()) {
            return;
        }
        int rc;
        synchronized (lock) {
            if (life.closed()) {
                return;
            }
            rc = post(buffer);
        }
        if (rc != 0) {
            LOG.log(System.Logger.Level.WARNING, "posting receive buffer " + buffer + " of " + qp.localAddress()
                    + " again failed: " + Errno.name(rc));
        }
    }

    /**
     * Fails the waiting receive with {@code why}, drops the datagrams nobody took and frees the
     * buffers; by the teardown, once the queue pair is gone (datagrams still open become unreadable).
     */
    void release(RuntimeException why) {
        CompletableFuture<Datagram> w;
        synchronized (lock) {
            w = waiter;
            waiter = null;
            ready.clear();
        }
        if (w != null) {
            w.completeExceptionally(why);
        }
        buffers.close();
    }
}
