package dev.jrdma.spi;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * An unreliable datagram queue pair (verbs: a UD QP; tcp/shm: a UDP socket) with its own
 * completion queue on one IO thread's {@link CompletionChannel}. A datagram is delivered whole
 * or not at all, in no promised order, and a send completes when it left this side, not when
 * it arrived.
 *
 * <p>Threads: {@link #poll} and {@link #arm} belong to the IO thread whose channel it was made
 * with. {@link #postSend} and {@link #postRecv} are each called by one thread at a time (the API
 * layer serialises each under its own lock), concurrently with the poll. {@link #resolve},
 * {@link #join}, {@link #leave} and {@link #close} run on the thread that drives the connection
 * manager that opened it; their callbacks run there too.
 */
public interface DatagramQueuePair {
    /**
     * {@link #postSend}'s answer (Linux's ESTALE) when {@code to} is a sender whose table entry
     * was evicted and whose resources were freed (verbs: its address handle): nothing was posted;
     * {@link #renew} it and post again.
     */
    int ESTALE = 116;

    /**
     * Bytes at the start of every receive buffer before the payload: verbs puts the 40-byte GRH
     * there, tcp/shm the sender's socket address. A receive buffer is this plus {@link #maxMessageSize}.
     */
    int headerBytes();

    /** The largest payload one datagram carries (verbs: the port's active MTU; a larger send is refused). */
    int maxMessageSize();

    /** The address peers resolve this endpoint at. */
    InetSocketAddress localAddress();

    /** Sends that may be in flight at once. */
    int sendDepth();

    /**
     * Posts a receive into {@code length} bytes at {@code localAddr} (registered with {@code lkey});
     * returns 0 or an errno (ENOMEM: the receive queue is full).
     */
    int postRecv(long wrId, long localAddr, int length, int lkey);

    /**
     * Posts a send of {@code length} bytes at {@code localAddr} to {@code to} (a peer of this queue
     * pair); returns 0, or an errno when nothing was posted (ENOMEM: the send queue is full;
     * {@link #ESTALE}: {@code to} was evicted, renew it). {@code wrId} is below {@link #sendDepth}:
     * a peer is held, not freed, while a send to it is in flight.
     */
    int postSend(long wrId, long localAddr, int length, int lkey, DatagramPeer to);

    /** Hands up to {@code max} completions to {@code sink}; returns how many. */
    int poll(Sink sink, int max);

    /** Asks for an event on the channel at the next completion. */
    void arm();

    /**
     * The sender of a datagram received into a buffer whose header (its first {@link #headerBytes})
     * is {@code header}, with {@code sourceQp} from its completion: the peer kept for it in a
     * {@link DatagramSenderTable} of at most {@code maxPeers} senders (now its most recently
     * seen), or a new one that evicts the least recently seen sender when the table is full.
     * Null only when the header names no address or the queue pair is closed. Any thread.
     */
    DatagramPeer sourceOf(MemorySegment header, int sourceQp, int maxPeers);

    /**
     * A peer to send to in place of {@code stale}, a sender {@link #postSend} answered
     * {@link #ESTALE} for: the table's peer for the same sender, made again (and added, as
     * {@link #sourceOf} adds) when it has none. Null when the queue pair is closed. Called by the
     * thread that posts sends.
     */
    DatagramPeer renew(DatagramPeer stale, int maxPeers);

    /** {@return the senders kept in the table now (at most the {@code maxPeers} last asked for)} */
    int senders();

    /** {@return the senders evicted from the table to make room for others, in this queue pair's life} */
    long sendersEvicted();

    /**
     * Finds the endpoint at {@code remote} (verbs: rdma_cm SIDR, which fails when nothing
     * listens there; tcp/shm: only the address, as UDP has no handshake) and calls
     * {@code done} once, with the peer or with why not.
     */
    void resolve(InetSocketAddress remote, int timeoutMs, Resolved done);

    /**
     * Joins multicast group {@code group}: from then on this queue pair receives what is sent to
     * it. {@code done} gets the group as a peer to send to, or why not.
     */
    void join(InetAddress group, Resolved done);

    /** Leaves a group joined with {@link #join}. */
    void leave(DatagramPeer group);

    /**
     * Destroys the queue pair, its completion queue and every peer it made. Posted sends and
     * receives are not completed afterwards: the caller completes what it still holds.
     */
    void close();

    /** Completions of a {@link DatagramQueuePair}, on its IO thread. */
    interface Sink {
        /** A send posted with {@code wrId} completed with {@code status} ({@link WorkCompletion}). */
        void onSend(long wrId, int status);

        /**
         * A receive posted with {@code wrId} completed: {@code byteLen} bytes of payload after the
         * header, sent by QP {@code sourceQp} (verbs; 0 on tcp/shm).
         */
        void onReceive(long wrId, int status, int byteLen, int sourceQp);
    }

    /** The outcome of {@link #resolve} or {@link #join}. */
    @FunctionalInterface
    interface Resolved {
        /** Exactly one of {@code peer} and {@code error} is null. */
        void done(DatagramPeer peer, String error);
    }
}
