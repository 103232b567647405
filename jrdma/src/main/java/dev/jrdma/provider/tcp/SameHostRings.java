package dev.jrdma.provider.tcp;

import dev.jrdma.os.Sockets;
import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The shared stream rings of one queue pair with a peer of this host, and the proven channel
 * they were exchanged on. This side writes its own ring (made here, offered to the peer as a
 * descriptor) and reads the peer's (handed over the same way and mapped here after the checks of
 * {@link TcpSameHost#map}). Built at the handshake on the connection manager's thread; after
 * {@link TcpQueuePair#start} the queue pair uses the rings, and {@link #close} frees all of it.
 */
final class SameHostRings implements AutoCloseable {
    /** The bytes of frames a ring holds. */
    static final long RING_BYTES = 1 << 20;
    /** The largest ring a peer may hand over. */
    private static final long MAX_PEER_RING = 1L << 30;

    private final TcpSameHost support;
    private ShareableMemory txMemory;
    private Arena rxArena;
    private SharedByteRing rxRing;
    /** The proven link to the peer (descriptors for rings and regions); null until exchanged. */
    private SameHostChannel channel;

    SameHostRings(TcpSameHost support) {
        this.support = support;
        this.txMemory = support.allocate(SharedByteRing.HEADER + RING_BYTES);
    }

    /** Whether both rings are in place and the channel proven: the connection may use them. */
    boolean ready() {
        return channel != null && txMemory != null && rxRing != null;
    }

    SameHostChannel channel() {
        return channel;
    }

    SharedByteRing rxRing() {
        return rxRing;
    }

    SharedByteRing txRing() {
        return new SharedByteRing(txMemory.segment());
    }

    /** {fd, offset, size} of the ring this side writes; null when there is none. */
    private long[] txLocation() {
        if (txMemory == null) {
            return null;
        }
        long[] where = support.locate(txMemory.segment());
        return where == null ? null : new long[] {where[0], where[1], txMemory.segment().byteSize()};
    }

    /**
     * Server, at ACCEPT: sends our ring on {@code ch}, a fresh channel to the client's rendezvous,
     * with the nonce of its HELLO. False when it could not (the channel is closed then).
     */
    boolean offer(SameHostChannel ch, byte[] nonce) {
        long[] ring = txLocation();
        ByteBuffer n = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
        if (ring == null || !ch.send(SameHostChannel.RING_OFFER, n.getLong(), n.getLong(), ring[1], ring[2],
                (int) ring[0])) {
            ch.close();
            return false;
        }
        channel = ch;
        return true;
    }

    /**
     * Client, at ACCEPT: maps the ring the server offered on {@code ch} and sends ours there.
     * False when either failed (the channel is closed then, and the connection keeps the socket).
     */
    boolean acceptOffer(SameHostChannel ch) {
        SameHostChannel.Record offer = ch.receive();
        if (offer != null && offer.kind() != SameHostChannel.RING_OFFER && offer.fd() >= 0) {
            Sockets.close(offer.fd());
        }
        long[] ring = txLocation();
        boolean ok = offer != null && offer.kind() == SameHostChannel.RING_OFFER && mapPeerRing(offer)
                && ring != null && ch.send(SameHostChannel.RING, 0, 0, ring[1], ring[2], (int) ring[0]);
        if (!ok) {
            ch.close();
            dropRxRing();
            return false;
        }
        channel = ch;
        return true;
    }

    /** Server, at READY_TO_USE saying rings: the client's ring must be waiting on the channel. False: it is not. */
    boolean takePeerRing() {
        SameHostChannel.Record r = channel == null ? null : channel.receive();
        if (r != null && r.kind() != SameHostChannel.RING && r.fd() >= 0) {
            Sockets.close(r.fd());
        }
        return r != null && r.kind() == SameHostChannel.RING && mapPeerRing(r);
    }

    /** Maps the peer's ring (it writes, this side reads) that {@code r} handed over; false when it cannot be. */
    private boolean mapPeerRing(SameHostChannel.Record r) {
        long offset = r.c(), size = r.d();
        if (r.fd() < 0) {
            return false;
        }
        if (size <= SharedByteRing.HEADER || size > MAX_PEER_RING) {
            Sockets.close(r.fd());
            return false;
        }
        Arena a = Arena.ofShared();
        MemorySegment m;
        try {
            m = support.map(r.fd(), offset, size, true, a);
        } catch (RuntimeException e) {
            m = null;
        }
        if (m == null) {
            a.close();
            return false;
        }
        rxArena = a;
        rxRing = new SharedByteRing(m);
        return true;
    }

    private void dropRxRing() {
        if (rxArena != null) {
            rxArena.close();
            rxArena = null;
            rxRing = null;
        }
    }

    /** Frees both rings and closes the channel (the peer sees it end). */
    @Override
    public void close() {
        if (txMemory != null) {
            txMemory.close();
            txMemory = null;
        }
        dropRxRing();
        if (channel != null) {
            channel.close();
            channel = null;
        }
    }
}
