package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.os.Errno;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.DatagramPeer;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Unreliable datagrams: an endpoint that sends to and receives from other endpoints without a
 * connection, and joins multicast groups. On verbs it is a UD queue pair found through rdma_cm
 * (RDMA_PS_UDP); on tcp and shm a UDP socket. Made by {@link Rdma#datagramEndpoint}.
 *
 * <p><b>Unreliable, as UD is.</b> A datagram arrives whole or not at all, at most once, in no
 * promised order; a {@link #send} completes when the datagram left this side, which says nothing
 * of its arrival. A datagram that finds no posted receive buffer at its destination is dropped
 * (verbs drops it at once; tcp/shm let the socket's buffer hold a few first). A payload is at
 * most {@link #maxMessageSize()} bytes (verbs: the port's active MTU, since rxe and NICs drop a
 * larger UD send after reporting it sent; tcp/shm: 4096), and a larger send is refused before
 * it is posted.
 *
 * <pre>{@code
 * DatagramEndpoint server = rdma.datagramEndpoint(new InetSocketAddress(ip, 7000), 64);
 * server.onReceive(d -> {                        // on the IO thread
 *     try (d) { server.send(d.sender(), reply); }
 * });
 * DatagramEndpoint client = other.datagramEndpoint(new InetSocketAddress(myIp, 0), 64);
 * DatagramAddress to = client.resolve(new InetSocketAddress(ip, 7000)).join();
 * client.send(to, request).join();
 * try (Datagram d = client.receive(Duration.ofSeconds(1))) { ... }
 * }</pre>
 *
 * <p><b>Multicast.</b> {@link #join} a group (an IPv4 multicast address) and send to the address
 * it returns: every member receives, the sender too when it is a member (rxe loops a group's
 * datagrams back, as UDP does with IP_MULTICAST_LOOP; jrdma delivers that copy rather than guess
 * which datagrams are its own). On tcp/shm the endpoint must be bound to the address of an
 * interface with the MULTICAST flag; Linux's {@code lo} has none by default, and joining there
 * throws {@link dev.jrdma.exceptions.UnsupportedCapabilityException} saying so.
 *
 * <p><b>Senders.</b> {@link Datagram#sender()} is answered from a table of the senders this
 * endpoint has heard from, at most {@link #maxSenders()} of them ({@link #DEFAULT_MAX_SENDERS}
 * unless {@link Rdma#datagramEndpoint(InetSocketAddress, int, int, int)} set it): a new sender
 * when the table is full evicts the least recently seen one, so a flood from many addresses costs
 * that many entries (on verbs, address handles) and never keeps a new sender from being
 * answered. An evicted sender's {@link DatagramAddress} stays good to send to: it names its peer
 * (address and, on verbs, QP number), and a send to it makes its entry again (on verbs a new
 * address handle; the old one is destroyed once no send to it is in flight, never under one).
 *
 * <p>Threads: sends, receives, resolves and joins may be made from any thread. A
 * {@link #onReceive} handler runs on the endpoint's IO thread, as a connection's do.
 */
public final class DatagramEndpoint implements AutoCloseable {
    /**
     * The senders ({@link Datagram#sender()}) an endpoint keeps in its table unless it was made with
     * another bound: a server answering a few thousand clients at once keeps each, and a flood of
     * more costs at most this many entries.
     */
    public static final int DEFAULT_MAX_SENDERS = 4096;
    /** The largest sender table an endpoint may be given (verbs keeps an address handle per entry). */
    public static final int MAX_SENDERS_LIMIT = 65536;
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    private final Rdma rdma;
    private final IoThread io;
    private final DatagramQueuePair qp;
    private final LocalRegion buffers;
    /** Each buffer's header (GRH or sockaddr) and payload area, sliced once: a receive slices only its payload. */
    private final MemorySegment[] headers;
    private final MemorySegment[] payloads;
    private final int bufferCount;
    private final int slot;
    private final int header;
    private final Duration resolveTimeout;
    private final int maxSenders;
    private final IoThread.Source source;
    private final Object recvLock = new Object();
    private final Object sendLock = new Object();
    /**
     * Sends in flight by slot (the wrId): what completes each (a CompletableFuture, or a
     * CompletionHandler with its attachment), with the region it holds; guarded by sendLock.
     */
    private final Object[] sends;
    private final Object[] sendAttachments;
    private final LocalRegion[] sendRegions;
    private final int[] freeSlots;
    private int freeCount;
    /** Received, not yet taken by {@link #receive}; guarded by recvLock. */
    private final ArrayDeque<Datagram> ready = new ArrayDeque<>();
    private CompletableFuture<Datagram> waiter;
    private volatile Consumer<Datagram> handler;
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong receiveErrors = new AtomicLong();
    /** Polls of the queue pair that threw (each logged): for tests, which expect none. */
    private final AtomicLong pollFailures = new AtomicLong();
    private volatile boolean closed;

    @SuppressWarnings("unchecked")
    DatagramEndpoint(Rdma rdma, IoThread io, DatagramQueuePair qp, int bufferCount, Duration resolveTimeout,
                     int maxSenders) {
        checkMaxSenders(maxSenders);
        this.rdma = rdma;
        this.maxSenders = maxSenders;
        this.io = io;
        this.qp = qp;
        this.bufferCount = bufferCount;
        this.header = qp.headerBytes();
        this.slot = (header + qp.maxMessageSize() + 63) & ~63;
        this.resolveTimeout = resolveTimeout;
        this.buffers = rdma.allocate((long) slot * bufferCount);
        this.headers = new MemorySegment[bufferCount];
        this.payloads = new MemorySegment[bufferCount];
        for (int i = 0; i < bufferCount; i++) {
            headers[i] = buffers.segment().asSlice((long) i * slot, header);
            payloads[i] = buffers.segment().asSlice((long) i * slot + header, slot - header);
        }
        int depth = qp.sendDepth();
        this.sends = new Object[depth];
        this.sendAttachments = new Object[depth];
        this.sendRegions = new LocalRegion[depth];
        this.freeSlots = new int[depth];
        for (int i = 0; i < depth; i++) {
            freeSlots[i] = depth - 1 - i;
        }
        this.freeCount = depth;
        DatagramQueuePair.Sink sink = new DatagramQueuePair.Sink() {
            @Override
            public void onSend(long wrId, int status) {
                sendCompleted((int) wrId, status);
            }

            @Override
            public void onReceive(long wrId, int status, int byteLen, int sourceQp) {
                receiveCompleted((int) wrId, status, byteLen, sourceQp);
            }
        };
        this.source = new IoThread.Source() {
            @Override
            public int poll() {
                return closed ? 0 : qp.poll(sink, 32);
            }

            @Override
            public void arm() {
                if (!closed) {
                    qp.arm();
                }
            }

            @Override
            public void failed(Throwable t) {
                pollFailures.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "datagram endpoint " + localAddress() + " failed", t);
            }
        };
        for (int i = 0; i < bufferCount; i++) {
            int rc;
            synchronized (recvLock) {
                rc = qp.postRecv(i, buffers.address() + (long) i * slot, slot, buffers.lkey());
            }
            if (rc != 0) {
                buffers.close();
                throw new RdmaException("posting receive buffer " + i + " of " + bufferCount + " failed: "
                        + Errno.name(rc));
            }
        }
        io.execute(() -> io.add(source));
    }

    /** {@return the address peers resolve this endpoint at (its port is chosen when bound to 0)} */
    public InetSocketAddress localAddress() {
        return qp.localAddress();
    }

    /** {@return the largest payload one datagram carries: a larger send is refused} */
    public int maxMessageSize() {
        return qp.maxMessageSize();
    }

    /** {@return its receive buffers (each holds one datagram of up to {@link #maxMessageSize()} bytes)} */
    public int receiveBuffers() {
        return bufferCount;
    }

    /**
     * Refuses a sender table bound outside 1 to {@link #MAX_SENDERS_LIMIT}, naming it.
     *
     * @param maxSenders the bound to check
     */
    static void checkMaxSenders(int maxSenders) {
        if (maxSenders < 1 || maxSenders > MAX_SENDERS_LIMIT) {
            throw new IllegalArgumentException("maxSenders must be 1 to " + MAX_SENDERS_LIMIT + ", not " + maxSenders);
        }
    }

    /** {@return the most senders its table keeps: past them the least recently seen is evicted} */
    public int maxSenders() {
        return maxSenders;
    }

    /** {@return the senders its table keeps now, at most {@link #maxSenders()}} */
    public int senders() {
        return qp.senders();
    }

    /** {@return the senders evicted from its table to make room for new ones, in its life} */
    public long sendersEvicted() {
        return qp.sendersEvicted();
    }

    /** {@return datagrams sent (their sends completed successfully)} */
    public long sent() {
        return sent.get();
    }

    /** {@return datagrams received} */
    public long received() {
        return received.get();
    }

    /** {@return receives that completed with an error (verbs: a datagram larger than a buffer), their buffers posted again} */
    public long receiveErrors() {
        return receiveErrors.get();
    }

    /**
     * Finds the endpoint at {@code remote}: on verbs through rdma_cm (a SIDR request, answered by
     * the endpoint bound there with its QP number), which fails when nothing is bound there; on
     * tcp/shm only the address is taken (UDP has no handshake), so a wrong one shows only as
     * datagrams that never arrive.
     *
     * @param remote an endpoint's {@link #localAddress()}
     * @return the address to send to, or a failure naming {@code remote} (an
     *         {@link RdmaTimeoutException} after the endpoint's resolve timeout)
     */
    public CompletableFuture<DatagramAddress> resolve(InetSocketAddress remote) {
        if (remote == null || remote.isUnresolved()) {
            throw new IllegalArgumentException("resolve needs a resolved address, not " + remote);
        }
        CompletableFuture<DatagramAddress> f = new CompletableFuture<>();
        if (closed) {
            f.completeExceptionally(new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed"));
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

    /**
     * {@link #resolve} and wait for it (driving the IO loop meanwhile where the caller must: an
     * {@link Rdma#INLINE} instance).
     *
     * @param remote an endpoint's {@link #localAddress()}
     * @return the address to send to
     * @throws RdmaException naming {@code remote} when it cannot be resolved, or in time
     */
    public DatagramAddress resolveSync(InetSocketAddress remote) {
        notOnIoThread("resolveSync", "resolve");
        return rdma.io().await(resolve(remote), resolveTimeout.plusSeconds(2));   // the control thread resolves
    }

    /**
     * Joins multicast group {@code group} (an IPv4 multicast address): from now on this endpoint
     * receives what is sent to the group, its own sends to it included.
     *
     * @param group the group's address
     * @return the group, to send to; or a failure naming it
     *         ({@link dev.jrdma.exceptions.UnsupportedCapabilityException} where the endpoint's
     *         interface has no multicast)
     */
    public CompletableFuture<DatagramAddress> join(InetAddress group) {
        if (group == null || !group.isMulticastAddress()) {
            throw new IllegalArgumentException(group + " is not a multicast address (IPv4: 224.0.0.0/4)");
        }
        CompletableFuture<DatagramAddress> f = new CompletableFuture<>();
        if (closed) {
            f.completeExceptionally(new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed"));
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

    /**
     * {@link #join} and wait for it.
     *
     * @param group the group's address
     * @return the group, to send to
     * @throws dev.jrdma.exceptions.UnsupportedCapabilityException where the interface has no multicast
     */
    public DatagramAddress joinSync(InetAddress group) {
        notOnIoThread("joinSync", "join");
        return rdma.io().await(join(group), resolveTimeout.plusSeconds(2));
    }

    /**
     * Leaves a group joined with {@link #join}: no more of its datagrams arrive here (those
     * already received stay readable). Sending to it afterwards is refused.
     *
     * @param group what {@link #join} returned
     */
    public void leave(DatagramAddress group) {
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
            f.complete(new DatagramAddress(this, peer));
        } else {
            f.completeExceptionally(new RdmaException(what + " from " + localAddress() + " failed: " + error));
        }
    }

    private <T> CompletableFuture<T> within(CompletableFuture<T> f, String what) {
        // rdma_cm has timeouts of its own, but a SIDR request that nobody answers can retry for long.
        CompletableFuture<T> timer = new CompletableFuture<>();
        f.whenComplete((v, e) -> timer.complete(null));
        timer.orTimeout(resolveTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS).exceptionally(e -> {
            f.completeExceptionally(new RdmaTimeoutException(what + " from " + localAddress()
                    + " did not complete within " + resolveTimeout));
            return null;
        });
        return f;
    }

    /**
     * Sends all of {@code data}; see {@link #send(DatagramAddress, LocalRegion, long, int)}.
     *
     * @param to   where to
     * @param data the payload, at most {@link #maxMessageSize()} bytes
     * @return completes when the datagram was sent
     */
    public CompletableFuture<Void> send(DatagramAddress to, LocalRegion data) {
        if (data.length() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("send: " + data.length() + " bytes is more than one datagram carries ("
                    + maxMessageSize() + ")");
        }
        return send(to, data, 0, (int) data.length());
    }

    /**
     * {@link #send(DatagramAddress, LocalRegion)} and wait until it was sent.
     *
     * @param to   where to
     * @param data the payload
     */
    public void sendSync(DatagramAddress to, LocalRegion data) {
        notOnIoThread("sendSync", "send");
        await(send(to, data), Duration.ofSeconds(30));
    }

    /** A blocking call on one of jrdma's IO threads would wait for work only that thread can do. */
    private void notOnIoThread(String call, String instead) {
        if (rdma.isIoThread()) {
            throw new IllegalStateException(call + " on jrdma's IO thread (" + Thread.currentThread().getName()
                    + ") would wait for that thread itself: use " + instead + " there");
        }
    }

    private <T> T await(CompletableFuture<T> f, Duration timeout) {
        try {
            return io.await(f, timeout.toNanos());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new RdmaTimeoutException("datagram endpoint " + localAddress() + ": did not complete within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    /**
     * Sends {@code length} bytes of {@code data} from {@code offset} as one datagram to {@code to}.
     * The region is held until the send completes. <b>Unreliable:</b> completion means the
     * datagram left; it may still be lost.
     *
     * @param to     an address of this endpoint (resolved, a sender's, or a group's)
     * @param data   registered memory of this endpoint's {@code Rdma}
     * @param offset where the payload starts in {@code data}
     * @param length the payload's bytes, 0 to {@link #maxMessageSize()}
     * @return completes when the datagram was sent; fails with {@link RdmaException} when the
     *         send queue is full ({@link DatagramQueuePair#sendDepth()} in flight) or the device
     *         refused it
     * @throws IllegalArgumentException for a payload over {@link #maxMessageSize()}, a range
     *         outside the region, a closed region, an address of another endpoint, or a group
     *         left already
     */
    public CompletableFuture<Void> send(DatagramAddress to, LocalRegion data, long offset, int length) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        RuntimeException refused = post(to, data, offset, length, f, null);
        if (refused != null) {
            f.completeExceptionally(refused);
        }
        return f;
    }

    /**
     * {@link #send(DatagramAddress, LocalRegion, long, int)} reporting to {@code handler} instead
     * of a future, for a data path that allocates nothing per datagram: {@code completed} on the
     * endpoint's IO thread once it was sent, {@code failed} there when the device failed it, at
     * once on this thread when it was refused (a full send queue, a closed endpoint), and, for a
     * send still in flight when the endpoint closes, {@code failed} with a {@link
     * ConnectionClosedException} on the thread that tears it down (jrdma's control thread). A
     * handler that throws is logged; the endpoint carries on.
     *
     * @param to         an address of this endpoint
     * @param data       registered memory of this endpoint's {@code Rdma}
     * @param offset     where the payload starts in {@code data}
     * @param length     the payload's bytes, 0 to {@link #maxMessageSize()}
     * @param attachment handed to the handler
     * @param handler    told once how the send ended
     * @param <A>        the attachment's type
     * @throws IllegalArgumentException as for {@link #send(DatagramAddress, LocalRegion, long, int)}
     */
    public <A> void send(DatagramAddress to, LocalRegion data, long offset, int length, A attachment,
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
        checkMine(to, "send");
        if (length < 0 || length > maxMessageSize()) {
            throw new IllegalArgumentException("send: a datagram carries 0 to " + maxMessageSize() + " bytes here, not "
                    + length);
        }
        if (offset < 0 || offset + length > data.length()) {
            throw new IllegalArgumentException("send: bytes [" + offset + ", " + (offset + length)
                    + ") are outside the region of " + data.length() + " bytes");
        }
        if (closed) {
            return new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed");
        }
        if (!data.resources().acquireForOperation()) {
            throw new IllegalArgumentException("send: the local region is closed");
        }
        int rc;
        synchronized (sendLock) {
            if (freeCount == 0) {
                data.resources().releaseFromOperation();
                return new RdmaException("send: the send queue of " + localAddress() + " is full ("
                        + sends.length + " datagrams in flight)");
            }
            int s = freeSlots[--freeCount];
            sends[s] = completion;
            sendAttachments[s] = attachment;
            sendRegions[s] = data;
            rc = closed ? Errno.EINVAL : postTo(to, s, data.address() + offset, length, data.lkey());
            if (rc != 0) {
                sends[s] = null;
                sendAttachments[s] = null;
                sendRegions[s] = null;
                freeSlots[freeCount++] = s;
            }
        }
        if (rc != 0) {
            data.resources().releaseFromOperation();
            return closed ? new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed")
                    : new RdmaException("send of " + length + " bytes to " + to + " was refused by the device: "
                    + Errno.name(rc) + (rc == Errno.EINVAL ? " (a region of another Rdma, or a group left already)" : ""));
        }
        return null;
    }

    /**
     * Posts slot {@code s} to {@code to}'s peer; a sender evicted meanwhile whose provider freed
     * what it held is made again, once, and {@code to} names the new peer from then on. Under sendLock.
     */
    private int postTo(DatagramAddress to, int s, long address, int length, int lkey) {
        DatagramPeer peer = to.peer;
        int rc = qp.postSend(s, address, length, lkey, peer);
        if (rc != DatagramQueuePair.ESTALE) {
            return rc;
        }
        DatagramPeer again = qp.renew(peer, maxSenders);
        if (again == null) {
            return Errno.EINVAL;   // closed meanwhile
        }
        to.peer = again;
        return qp.postSend(s, address, length, lkey, again);
    }

    private void checkMine(DatagramAddress to, String what) {
        if (to == null) {
            throw new IllegalArgumentException(what + ": no address");
        }
        if (to.endpoint() != this) {
            throw new IllegalArgumentException(what + ": " + to + " is an address of another endpoint ("
                    + to.endpoint().localAddress() + "); resolve it from this one");
        }
    }

    private void sendCompleted(int s, int status) {
        Object completion, attachment;
        LocalRegion region;
        synchronized (sendLock) {
            completion = sends[s];
            attachment = sendAttachments[s];
            region = sendRegions[s];
            if (completion == null) {
                return;
            }
            sends[s] = null;
            sendAttachments[s] = null;
            sendRegions[s] = null;
            freeSlots[freeCount++] = s;
        }
        region.resources().releaseFromOperation();
        if (status == WorkCompletion.SUCCESS) {
            sent.incrementAndGet();
            complete(completion, attachment, null);
        } else {
            complete(completion, attachment, new RdmaException("datagram send from " + localAddress() + " failed: "
                    + WorkCompletion.statusName(status)));
        }
    }

    /**
     * Tells a send's future or handler how it ended ({@code failure} null: sent). A handler that
     * throws is logged and passed over: the completions polled with its own, and the other sends
     * a close fails, must still be told.
     */
    @SuppressWarnings("unchecked")
    private void complete(Object completion, Object attachment, Throwable failure) {
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

    long pollFailures() {
        return pollFailures.get();
    }

    private void receiveCompleted(int buffer, int status, int byteLen, int sourceQp) {
        if (closed) {
            return;   // closed from an earlier callback of this poll: nothing more is delivered
        }
        if (status != WorkCompletion.SUCCESS || byteLen < 0 || byteLen > maxMessageSize()) {
            receiveErrors.incrementAndGet();
            repost(buffer);
            return;
        }
        received.incrementAndGet();
        Datagram d = new Datagram(this, buffer, headers[buffer], payloads[buffer].asSlice(0, byteLen), sourceQp);
        Consumer<Datagram> h = handler;
        if (h != null) {
            try {
                h.accept(d);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the onReceive handler of " + localAddress() + " threw", e);
                d.close();
            }
            return;
        }
        CompletableFuture<Datagram> w;
        synchronized (recvLock) {
            w = waiter;
            waiter = null;
            if (w == null) {
                ready.add(d);
                return;
            }
        }
        if (!w.complete(d)) {
            synchronized (recvLock) {
                ready.addFirst(d);   // the waiter gave up meanwhile
            }
        }
    }

    /**
     * Hands every datagram, from now on, to {@code handler} on the endpoint's IO thread (those
     * received before and not taken first). The handler closes each when done; one it throws on
     * is closed for it. Null: back to {@link #receive}.
     *
     * @param handler called with each datagram, or null
     */
    public void onReceive(Consumer<Datagram> handler) {
        java.util.List<Datagram> earlier = new java.util.ArrayList<>();
        synchronized (recvLock) {
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

    /**
     * The next datagram, waiting up to {@code timeout} for one. Close it when done.
     *
     * @param timeout how long to wait
     * @return the datagram
     * @throws RdmaTimeoutException when none came within {@code timeout}
     * @throws ConnectionClosedException when the endpoint is closed
     * @throws IllegalStateException when an {@link #onReceive} handler takes the datagrams
     */
    public Datagram receive(Duration timeout) {
        notOnIoThread("receive", "onReceive");
        CompletableFuture<Datagram> f;
        synchronized (recvLock) {
            if (handler != null) {
                throw new IllegalStateException("receive: an onReceive handler takes this endpoint's datagrams");
            }
            Datagram d = ready.poll();
            if (d != null) {
                return d;
            }
            if (closed) {
                throw new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed");
            }
            if (waiter != null) {
                throw new IllegalStateException("receive: another thread is waiting on this endpoint");
            }
            f = new CompletableFuture<>();
            waiter = f;
        }
        try {
            return io.await(f, timeout.toNanos());
        } catch (java.util.concurrent.TimeoutException e) {
            synchronized (recvLock) {
                if (waiter == f) {
                    waiter = null;
                }
            }
            Datagram late = f.getNow(null);
            if (late != null) {
                return late;
            }
            throw new RdmaTimeoutException("no datagram reached " + localAddress() + " within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while waiting for a datagram");
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    DatagramAddress senderOf(MemorySegment header, int sourceQp) {
        if (closed) {
            throw new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed");
        }
        DatagramPeer p = qp.sourceOf(header, sourceQp, maxSenders);
        if (p == null) {
            if (closed) {
                throw new ConnectionClosedException("datagram endpoint " + localAddress() + " is closed");
            }
            throw new RdmaException("the sender of a datagram to " + localAddress() + " is not readable from its header");
        }
        return new DatagramAddress(this, p);
    }

    void repost(int buffer) {
        if (closed) {
            return;
        }
        int rc;
        synchronized (recvLock) {
            if (closed) {
                return;
            }
            rc = qp.postRecv(buffer, buffers.address() + (long) buffer * slot, slot, buffers.lkey());
        }
        if (rc != 0) {
            LOG.log(System.Logger.Level.WARNING, "posting receive buffer " + buffer + " of " + localAddress()
                    + " again failed: " + Errno.name(rc));
        }
    }

    /**
     * Closes the endpoint: leaves its groups, fails the sends still in flight and any waiting
     * {@link #receive}, and frees its buffers (datagrams still open become unreadable) and, on
     * verbs, its address handles. Idempotent.
     */
    @Override
    public void close() {
        synchronized (recvLock) {
            synchronized (sendLock) {
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
        java.util.List<Object[]> failed = new java.util.ArrayList<>();
        synchronized (sendLock) {
            for (int s = 0; s < sends.length; s++) {
                if (sends[s] != null) {
                    failed.add(new Object[] {sends[s], sendAttachments[s]});
                    sendRegions[s].resources().releaseFromOperation();
                    sends[s] = null;
                    sendAttachments[s] = null;
                    sendRegions[s] = null;
                }
            }
        }
        failed.forEach(f -> complete(f[0], f[1], why));
        CompletableFuture<Datagram> w;
        synchronized (recvLock) {
            w = waiter;
            waiter = null;
            ready.clear();
        }
        if (w != null) {
            w.completeExceptionally(why);
        }
        buffers.close();
        rdma.live().datagramEndpointClosed(this);
    }

    @Override
    public String toString() {
        return "DatagramEndpoint[" + qp.localAddress() + (closed ? ", closed" : "") + "]";
    }
}
