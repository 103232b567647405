package dev.jrdma.spi;

import java.net.InetSocketAddress;

/**
 * Where a datagram goes, as its provider addresses it: on verbs an address handle
 * ({@code ibv_ah}) with the remote QP number and Q_Key, on tcp/shm a socket address. Made by its
 * {@link DatagramQueuePair} (a resolve, a join, or the source of a receive) and freed with it;
 * a sender's may be freed sooner, when it is evicted from the queue pair's
 * {@link DatagramSenderTable} and no send to it is in flight (then a send to it is answered
 * {@link DatagramQueuePair#ESTALE}). It always names its peer, so it can be made again.
 */
public interface DatagramPeer {
    /**
     * The peer's IP address and port: on tcp/shm the UDP socket's; on verbs the rdma_cm port it
     * was resolved at, or 0 when it was learned from a receive (verbs names a sender by its QP).
     */
    InetSocketAddress address();

    /** The peer's QP number on verbs (0xFFFFFF for a multicast group), or 0 on tcp/shm. */
    int queuePairNumber();

    /** Whether it is a multicast group. */
    boolean group();
}
