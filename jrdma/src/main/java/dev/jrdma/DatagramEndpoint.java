package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.DatagramQueuePair;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
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

    // The facade: each call checks what only the API knows of (the calling thread) and hands on to
    // the part that owns the work. DatagramLife: open or closed, the IO thread's polling, the
    // teardown. DatagramSends: send slots, posting, send completions. DatagramReceives: receive
    // buffers, delivery, reposting. DatagramPeers: resolve, join, leave, the sender table.
    // DatagramCounters: the statistics.
    private final Rdma rdma;
    private final DatagramQueuePair qp;
    private final DatagramCounters counters = new DatagramCounters();
    private final DatagramLife life;
    private final DatagramPeers peers;
    private final DatagramSends sends;
    private final DatagramReceives receives;

    DatagramEndpoint(Rdma rdma, IoThread io, DatagramQueuePair qp, int bufferCount, Duration resolveTimeout,
                     int maxSenders) {
        checkMaxSenders(maxSenders);
        this.rdma = rdma;
        this.qp = qp;
        this.life = new DatagramLife(this, rdma, io, qp, counters);
        this.peers = new DatagramPeers(this, rdma, qp, life, resolveTimeout, maxSenders);
        this.receives = new DatagramReceives(this, rdma, io, qp, life, bufferCount, counters);
        this.sends = new DatagramSends(io, qp, life, peers, counters);
        life.parts(sends, receives);
        receives.postAll();
        life.start();
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
        return receives.bufferCount();
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
        return peers.maxSenders();
    }

    /** {@return the senders its table keeps now, at most {@link #maxSenders()}} */
    public int senders() {
        return peers.senders();
    }

    /** {@return the senders evicted from its table to make room for new ones, in its life} */
    public long sendersEvicted() {
        return peers.sendersEvicted();
    }

    /** {@return datagrams sent (their sends completed successfully)} */
    public long sent() {
        return counters.sent.get();
    }

    /** {@return datagrams received} */
    public long received() {
        return counters.received.get();
    }

    /** {@return receives that completed with an error (verbs: a datagram larger than a buffer), their buffers posted again} */
    public long receiveErrors() {
        return counters.receiveErrors.get();
    }

    /** Polls of the queue pair that threw: for tests, which expect none. */
    long pollFailures() {
        return counters.pollFailures.get();
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
        return peers.resolve(remote);
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
        return rdma.io().await(resolve(remote), peers.resolveTimeout().plusSeconds(2));   // the control thread resolves
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
        return peers.join(group);
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
        return rdma.io().await(join(group), peers.resolveTimeout().plusSeconds(2));
    }

    /**
     * Leaves a group joined with {@link #join}: no more of its datagrams arrive here (those
     * already received stay readable). Sending to it afterwards is refused.
     *
     * @param group what {@link #join} returned
     */
    public void leave(DatagramAddress group) {
        peers.leave(group);
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
        sends.await(send(to, data), Duration.ofSeconds(30));
    }

    /** A blocking call on one of jrdma's IO threads would wait for work only that thread can do. */
    private void notOnIoThread(String call, String instead) {
        if (rdma.isIoThread()) {
            throw new IllegalStateException(call + " on jrdma's IO thread (" + Thread.currentThread().getName()
                    + ") would wait for that thread itself: use " + instead + " there");
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
        return sends.send(to, data, offset, length);
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
        sends.send(to, data, offset, length, attachment, handler);
    }

    /**
     * Hands every datagram, from now on, to {@code handler} on the endpoint's IO thread (those
     * received before and not taken first). The handler closes each when done; one it throws on
     * is closed for it. Null: back to {@link #receive}.
     *
     * @param handler called with each datagram, or null
     */
    public void onReceive(Consumer<Datagram> handler) {
        receives.onReceive(handler);
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
        return receives.receive(timeout);
    }

    /** For {@link Datagram#sender()}: the sender's address, from the sender table. */
    DatagramAddress senderOf(MemorySegment header, int sourceQp) {
        return peers.senderOf(header, sourceQp);
    }

    /** For {@link Datagram#close()}: its buffer receives again. */
    void repost(int buffer) {
        receives.repost(buffer);
    }

    /**
     * Closes the endpoint: leaves its groups, fails the sends still in flight and any waiting
     * {@link #receive}, and frees its buffers (datagrams still open become unreadable) and, on
     * verbs, its address handles. Idempotent.
     */
    @Override
    public void close() {
        life.close();
    }

    @Override
    public String toString() {
        return "DatagramEndpoint[" + qp.localAddress() + (life.closed() ? ", closed" : "") + "]";
    }
}
