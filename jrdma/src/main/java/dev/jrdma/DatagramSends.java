package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.os.Errno;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.DatagramPeer;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.WorkCompletion;

import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * A datagram endpoint's send side: its send slots, one per send the queue pair may have in flight
 * ({@link DatagramQueuePair#sendDepth()}), each holding what to tell when its send completes (a
 * CompletableFuture, or a CompletionHandler with its attachment) and the region the send holds
 * until then; the posting of a datagram into a free slot (its wr_id is the slot); and the telling
 * of its end, by its completion or by the close.
 *
 * <p>Threads: any thread posts; the IO thread completes; the teardown fails what is still in
 * flight. All three take {@link #lock}, which also serialises the posts to the queue pair (one
 * poster at a time, as it requires), and tell futures and handlers outside it.
 */
final class DatagramSends {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    /** Guards the slots and the posts; the close sets the closed flag under it too. */
    final Object lock = new Object();
    private final IoThread io;
    private final DatagramQueuePair qp;
    private final DatagramLife life;
    private final DatagramPeers peers;
    private final DatagramCounters counters;
    // By slot: what completes it (null: free), its handler's attachment, and the region it holds.
    private final Object[] completions;
    private final Object[] attachments;
    private final LocalRegion[] regions;
    /** The free slots, a stack: {@link #freeCount} of them from the bottom. */
    private final int[] freeSlots;
    private int freeCount;

    DatagramSends(IoThread io, DatagramQueuePair qp, DatagramLife life, DatagramPeers peers, DatagramCounters counters) {
        this.io = io;
        this.qp = qp;
        this.life = life;
        this.peers = peers;
        this.counters = counters;
        int depth = qp.sendDepth();
        this.completions = new Object[depth];
        this.attachments = new Object[depth];
        this.regions = new LocalRegion[depth];
        this.freeSlots = new int[depth];
        for (int i = 0; i < depth; i++) {
            freeSlots[i] = depth - 1 - i;
        }
        this.freeCount = depth;
    }

    /** See {@link DatagramEndpoint#send(DatagramAddress, LocalRegion, long, int)}. */
    CompletableFuture<Void> send(DatagramAddress to, LocalRegion data, long offset, int length) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        RuntimeException refused = post(to, data, offset, length, f, null);
        if (refused != null) {
            f.completeExceptionally(refused);
        }
        return f;
    }

    /** See {@link DatagramEndpoint#send(DatagramAddress, LocalRegion, long, int, Object, CompletionHandler)}. */
    <A> void send(DatagramAddress to, LocalRegion data, long offset, int length, A attachment,
                  CompletionHandler<Void, ? super A> handler) {
        if (handler == null) {
            throw new IllegalArgumentException("send: no handler");
        }
        RuntimeException refused = post(to, data, offset, length, handler, attachment);
        if (refused != null) {
            handler.failed(refused, attachment);
        }
    }

    /**
     * Posts one datagram whose end {@code completion} (a future or a handler) is told; returns
     * why it was refused at once (it is then not in flight), or null.
     */
    private RuntimeException post(DatagramAddress to, LocalRegion data, long offset, int length, Object completion,
                                  Object attachment) {
        peers.checkMine(to, "send");
        if (length < 0 || length > qp.maxMessageSize()) {
            throw new IllegalArgumentException("send: a datagram carries 0 to " + qp.maxMessageSize()
                    + " bytes here, not " + length);
        }
        if (offset < 0 || offset + length > data.length()) {
            throw new IllegalArgumentException("send: bytes [" + offset + ", " + (offset + length)
                    + ") are outside the region of " + data.length() + " bytes");
        }
        if (life.closed()) {
            return life.closedFailure();
        }
        if (!data.resources().acquireForOperation()) {
            throw new IllegalArgumentException("send: the local region is closed");
        }
        int rc;
        synchronized (lock) {
            if (freeCount == 0) {
                data.resources().releaseFromOperation();
                return new RdmaException("send: the send queue of " + qp.localAddress() + " is full ("
                        + completions.length + " datagrams in flight)");
            }
            int s = freeSlots[--freeCount];
            completions[s] = completion;
            attachments[s] = attachment;
            regions[s] = data;
            rc = life.closed() ? Errno.EINVAL : postTo(to, s, data.address() + offset, length, data.lkey());
            if (rc != 0) {
                free(s);
            }
        }
        if (rc != 0) {
            data.resources().releaseFromOperation();
            return life.closed() ? life.closedFailure()
                    : new RdmaException("send of " + length + " bytes to " + to + " was refused by the device: "
                    + Errno.name(rc) + (rc == Errno.EINVAL ? " (a region of another Rdma, or a group left already)" : ""));
        }
        return null;
    }

    /**
     * Posts slot {@code s} to {@code to}'s peer; a sender evicted meanwhile whose provider freed
     * what it held is made again, once, and {@code to} names the new peer from then on. Under the lock.
     */
    private int postTo(DatagramAddress to, int s, long address, int length, int lkey) {
        DatagramPeer peer = to.peer;
        int rc = qp.postSend(s, address, length, lkey, peer);
        if (rc != DatagramQueuePair.ESTALE) {
            return rc;
        }
        DatagramPeer again = peers.renew(to, peer);
        if (again == null) {
            return Errno.EINVAL;   // closed meanwhile
        }
        return qp.postSend(s, address, length, lkey, again);
    }

    /** Empties slot {@code s} and puts it back on the free stack; under the lock. */
    private void free(int s) {
        completions[s] = null;
        attachments[s] = null;
        regions[s] = null;
        freeSlots[freeCount++] = s;
    }

    /** The send in slot {@code s} completed with {@code status}; on the IO thread. */
    void completed(int s, int status) {
        Object completion, attachment;
        LocalRegion region;
        synchronized (lock) {
            completion = completions[s];
            attachment = attachments[s];
            region = regions[s];
            if (completion == null) {
                return;
            }
            free(s);
        }
        region.resources().releaseFromOperation();
        if (status == WorkCompletion.SUCCESS) {
            counters.sent.incrementAndGet();
            tell(completion, attachment, null);
        } else {
            tell(completion, attachment, new RdmaException("datagram send from " + qp.localAddress() + " failed: "
                    + WorkCompletion.statusName(status)));
        }
    }

    /**
     * Fails every send still in flight with {@code why}; by the teardown, once the queue pair is
     * gone and no completion can come for them. Their slots are emptied, not freed: nothing posts
     * on a closed endpoint.
     */
    void failInFlight(RuntimeException why) {
        List<Object[]> failed = new ArrayList<>();
        synchronized (lock) {
            for (int s = 0; s < completions.length; s++) {
                if (completions[s] != null) {
                    failed.add(new Object[] {completions[s], attachments[s]});
                    regions[s].resources().releaseFromOperation();
                    completions[s] = null;
                    attachments[s] = null;
                    regions[s] = null;
                }
            }
        }
        failed.forEach(f -> tell(f[0], f[1], why));
    }

    /**
     * Tells a send's future or handler how it ended ({@code failure} null: sent). A handler that
     * throws is logged and passed over: the completions polled with its own, and the other sends
     * a close fails, must still be told.
     */
    @SuppressWarnings("unchecked")
    private void tell(Object completion, Object attachment, Throwable failure) {
        if (completion instanceof CompletableFuture<?> f) {
            if (failure == null) {
                ((CompletableFuture<Void>) f).complete(null);
            } else {
                f.completeExceptionally(failure);
            }
            return;
        }
        CompletionHandler<Void, Object> h = (CompletionHandler<Void, Object>) completion;
        try {
            if (failure == null) {
                h.completed(null, attachment);
            } else {
                h.failed(failure, attachment);
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "a send handler of " + qp.localAddress() + " threw", e);
        }
    }

    /** Waits for a send's future for {@link DatagramEndpoint#sendSync}; its failure is thrown as it is. */
    void await(CompletableFuture<Void> f, Duration timeout) {
        try {
            io.await(f, timeout.toNanos());
        } catch (TimeoutException e) {
            throw new RdmaTimeoutException("datagram endpoint " + qp.localAddress() + ": did not complete within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }
}
