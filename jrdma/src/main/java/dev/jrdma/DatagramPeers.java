package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.spi.DatagramPeer;
import dev.jrdma.spi.DatagramQueuePair;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A datagram endpoint's peers, as {@link DatagramAddress}es: those it finds (resolved endpoints,
 * joined groups) and the senders it answers, from the table of senders the provider keeps
 * ({@link DatagramQueuePair#sourceOf}, bounded at {@link #maxSenders()} entries, the least
 * recently seen evicted). An address whose entry was evicted is made again for a send
 * ({@link #renew}). Only this endpoint's addresses may be sent to or left ({@link #checkMine}).
 *
 * <p>Threads: resolves, joins and leaves are asked from any thread and carried out on the
 * control thread, whose connection manager owns the queue pair's rdma_cm ids; a sender is looked
 * up on the thread that reads {@link Datagram#sender()}; a renewal happens under the send side's
 * lock.
 */
final class DatagramPeers {
    private final DatagramEndpoint endpoint;
    private final Rdma rdma;
    private final DatagramQueuePair qp;
    private final DatagramLife life;
    private final Duration resolveTimeout;
    private final int maxSenders;

    DatagramPeers(DatagramEndpoint endpoint, Rdma rdma, DatagramQueuePair qp, DatagramLife life,
                  Duration resolveTimeout, int maxSenders) {
        this.endpoint = endpoint;
        this.rdma = rdma;
        this.qp = qp;
        this.life = life;
        this.resolveTimeout = resolveTimeout;
        this.maxSenders = maxSenders;
    }

    int maxSenders() {
        return maxSenders;
    }

    /** The endpoint's resolve timeout: a resolve or a join fails a second after it, a leave waits as long. */
    Duration resolveTimeout() {
        return resolveTimeout;
    }

    int senders() {
        return qp.senders();
    }

    long sendersEvicted() {
        return qp.sendersEvicted();
    }

    /** See {@link DatagramEndpoint#resolve}. */
    CompletableFuture<DatagramAddress> resolve(InetSocketAddress remote) {
        if (remote == null || remote.isUnresolved()) {
            throw new IllegalArgumentException("resolve needs a resolved address, not " + remote);
        }
        CompletableFuture<DatagramAddress> f = new CompletableFuture<>();
        if (life.closed()) {
            f.completeExceptionally(life.closedFailure());
            return f;
        }
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, resolveTimeout.toMillis());
        rdma.io().execute(() -> {
            try {
                qp.resolve(remote, timeoutMs, (peer, error) -> finish(f, peer, "resolving " + remote, error));
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return within(f, "resolving " + remote);
    }

    /** See {@link DatagramEndpoint#join}. */
    CompletableFuture<DatagramAddress> join(InetAddress group) {
        if (group == null || !group.isMulticastAddress()) {
            throw new IllegalArgumentException(group + " is not a multicast address (IPv4: 224.0.0.0/4)");
        }
        CompletableFuture<DatagramAddress> f = new CompletableFuture<>();
        if (life.closed()) {
            f.completeExceptionally(life.closedFailure());
            return f;
        }
        rdma.io().execute(() -> {
            try {
                qp.join(group, (peer, error) -> finish(f, peer, "joining " + group.getHostAddress(), error));
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return within(f, "joining " + group.getHostAddress());
    }

    /** See {@link DatagramEndpoint#leave}. */
    void leave(DatagramAddress group) {
        checkMine(group, "leave");
        if (!group.isGroup()) {
            throw new IllegalArgumentException("leave: " + group + " is not a multicast group");
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        rdma.io().execute(() -> {
            try {
                qp.leave(group.peer);
                done.complete(null);
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
            }
        });
        if (!rdma.isIoThread()) {   // on an IO thread it is left once this callback returns
            rdma.io().await(done, resolveTimeout);
        }
    }

    private void finish(CompletableFuture<DatagramAddress> f, DatagramPeer peer, String what, String error) {
        if (peer != null) {
            f.complete(new DatagramAddress(endpoint, peer));
        } else {
            f.completeExceptionally(new RdmaException(what + " from " + qp.localAddress() + " failed: " + error));
        }
    }

    private <T> CompletableFuture<T> within(CompletableFuture<T> f, String what) {
        // rdma_cm has timeouts of its own, but a SIDR request that nobody answers can retry for long.
        CompletableFuture<T> timer = new CompletableFuture<>();
        f.whenComplete((v, e) -> timer.complete(null));
        timer.orTimeout(resolveTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS).exceptionally(e -> {
            f.completeExceptionally(new RdmaTimeoutException(what + " from " + qp.localAddress()
                    + " did not complete within " + resolveTimeout));
            return null;
        });
        return f;
    }

    /** The sender of a received datagram, from its header and completion: its table entry, made when new. */
    DatagramAddress senderOf(MemorySegment header, int sourceQp) {
        if (life.closed()) {
            throw life.closedFailure();
        }
        DatagramPeer p = qp.sourceOf(header, sourceQp, maxSenders);
        if (p == null) {
            if (life.closed()) {
                throw life.closedFailure();
            }
            throw new RdmaException("the sender of a datagram to " + qp.localAddress() + " is not readable from its header");
        }
        return new DatagramAddress(endpoint, p);
    }

    /**
     * Makes {@code to}'s peer again after a send to {@code stale}, its peer, found the entry
     * evicted and freed ({@link DatagramQueuePair#ESTALE}); {@code to} names the new peer from
     * then on, so the address the application holds keeps answering its sender. Under the send
     * side's lock.
     *
     * @return the new peer, or null when the queue pair closed meanwhile
     */
    DatagramPeer renew(DatagramAddress to, DatagramPeer stale) {
        DatagramPeer again = qp.renew(stale, maxSenders);
        if (again != null) {
            to.peer = again;
        }
        return again;
    }

    /** Refuses an address of no endpoint or of another one: its peer belongs to another queue pair. */
    void checkMine(DatagramAddress to, String what) {
        if (to == null) {
            throw new IllegalArgumentException(what + ": no address");
        }
        if (to.endpoint() != endpoint) {
            throw new IllegalArgumentException(what + ": " + to + " is an address of another endpoint ("
                    + to.endpoint().localAddress() + "); resolve it from this one");
        }
    }
}
