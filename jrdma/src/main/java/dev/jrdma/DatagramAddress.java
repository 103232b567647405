package dev.jrdma;

import dev.jrdma.spi.DatagramPeer;

import java.net.InetSocketAddress;

/**
 * Where a {@link DatagramEndpoint} sends: a peer endpoint found by
 * {@link DatagramEndpoint#resolve}, the sender of a received {@link Datagram}, or a multicast
 * group joined with {@link DatagramEndpoint#join}. It belongs to the endpoint that made it (on
 * verbs it is an address handle of that endpoint's device) and is valid until that endpoint
 * closes. Two addresses of one endpoint for the same peer are equal.
 */
public final class DatagramAddress {
    private final DatagramEndpoint endpoint;
    final DatagramPeer peer;

    DatagramAddress(DatagramEndpoint endpoint, DatagramPeer peer) {
        this.endpoint = endpoint;
        this.peer = peer;
    }

    /** {@return the endpoint that made it, and alone can send to it} */
    public DatagramEndpoint endpoint() {
        return endpoint;
    }

    /**
     * {@return the peer's IP address and port: on tcp/shm its UDP socket's; on verbs the port it was
     * resolved at, or 0 for the sender of a received datagram (verbs names a sender by its QP
     * number, {@link #queuePairNumber()}); a group's address and, on tcp/shm, the port its
     * members receive at}
     */
    public InetSocketAddress address() {
        return peer.address();
    }

    /** {@return the peer's QP number on verbs (0xFFFFFF for a multicast group), 0 on tcp/shm} */
    public int queuePairNumber() {
        return peer.queuePairNumber();
    }

    /** {@return whether it is a multicast group ({@link DatagramEndpoint#join})} */
    public boolean isGroup() {
        return peer.group();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DatagramAddress d && d.endpoint == endpoint && d.peer == peer;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(peer);
    }

    @Override
    public String toString() {
        InetSocketAddress a = peer.address();
        String at = a.getAddress().getHostAddress() + (a.getPort() != 0 ? ":" + a.getPort() : "");
        return (peer.group() ? "group " : "") + at
                + (peer.queuePairNumber() != 0 && !peer.group() ? " QP 0x" + Integer.toHexString(peer.queuePairNumber()) : "");
    }
}
