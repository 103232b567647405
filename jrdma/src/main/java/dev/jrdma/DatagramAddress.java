package dev.jrdma;

import dev.jrdma.spi.DatagramPeer;

import java.net.InetSocketAddress;

/**
 * Where a {@link DatagramEndpoint} sends: a peer endpoint found by
 * {@link DatagramEndpoint#resolve}, the sender of a received {@link Datagram}, or a multicast
 * group joined with {@link DatagramEndpoint#join}. It belongs to the endpoint that made it (on
 * verbs it is an address handle of that endpoint's device) and is valid until that endpoint
 * closes. Two addresses of one endpoint for the same peer (address, QP number, group or not)
 * are equal.
 *
 * <p>A sender's address stays valid when the endpoint's sender table evicts it (see
 * {@link DatagramEndpoint}): it carries the peer's address itself, and the next send to it puts
 * it back in the table (on verbs with a new address handle). Eviction never breaks a reply.
 */
public final class DatagramAddress {
    private final DatagramEndpoint endpoint;
    /** The provider's peer; a send replaces an evicted sender's with the one made again (under the endpoint's send lock). */
    volatile DatagramPeer peer;

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
        if (!(o instanceof DatagramAddress d) || d.endpoint != endpoint) {
            return false;
        }
        DatagramPeer mine = peer, theirs = d.peer;
        return mine == theirs || mine.queuePairNumber() == theirs.queuePairNumber() && mine.group() == theirs.group()
                && mine.address().equals(theirs.address());
    }

    @Override
    public int hashCode() {
        DatagramPeer p = peer;
        return (p.address().hashCode() * 31 + p.queuePairNumber()) * 2 + (p.group() ? 1 : 0);
    }

    @Override
    public String toString() {
        InetSocketAddress a = peer.address();
        String at = a.getAddress().getHostAddress() + (a.getPort() != 0 ? ":" + a.getPort() : "");
        return (peer.group() ? "group " : "") + at
                + (peer.queuePairNumber() != 0 && !peer.group() ? " QP 0x" + Integer.toHexString(peer.queuePairNumber()) : "");
    }
}
