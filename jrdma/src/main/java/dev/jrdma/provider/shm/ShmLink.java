package dev.jrdma.provider.shm;

import dev.jrdma.os.Sockets;
import dev.jrdma.provider.tcp.FrameRing;
import dev.jrdma.provider.tcp.SameHostChannel;
import dev.jrdma.provider.tcp.SameHostLink;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One connection's {@link SameHostLink}: the shared stream rings with a peer of this host, and
 * the proven channel they were exchanged on. This side writes its own ring (a sealed memfd made
 * here, handed to the peer as a descriptor) and reads the peer's (handed over the same way and
 * mapped after {@link ShmMemory#map}'s checks). Built during the handshake on the connection
 * manager's thread; once the connection starts, its queue pair uses the rings, and
 * {@link #close} frees all of it. Synchronized: the handshake's steps run on the manager's
 * thread (or an application thread that accepts), and close may come from any thread.
 */
final class ShmLink implements SameHostLink {
    /** The bytes of frames a ring holds. */
    static final long RING_BYTES = 1 << 20;
    /** The largest ring a peer may hand over. */
    private static final long MAX_PEER_RING = 1L << 30;

    private final ShmMemory support;
    private ShareableMemory txMemory;
    private Arena rxArena;
    private SharedByteRing rxRing;
    /** The proven link to the peer (descriptors for rings and regions); null until exchanged. */
    private SameHostChannel channel;
    /** Closed (from any thread, as the endpoint closes): no step takes or maps anything after it. */
    private boolean closed;

    ShmLink(ShmMemory support) {
        this.support = support;
        this.txMemory = support.allocate(SharedByteRing.HEADER + RING_BYTES);
    }

    @Override
    public synchronized boolean ready() {
        return channel != null && txMemory != null && rxRing != null;
    }

    @Override
    public synchronized SameHostChannel channel() {
        return channel;
    }

    @Override
    public synchronized FrameRing rxRing() {
        return rxRing;
    }

    @Override
    public synchronized FrameRing txRing() {
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

    @Override
    public synchronized boolean offer(byte[] rendezvous, byte[] nonce) {
        if (closed) {
            return false;
        }
        SameHostChannel ch = support.connect(rendezvous);
        if (ch == null) {
            return false;   // logged: another user, another network namespace, or not a rendezvous
        }
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

    @Override
    public synchronized boolean join(byte[] nonce) {
        if (closed) {
            return false;
        }
        SameHostChannel ch = support.arrived(nonce);
        if (ch == null) {
            Log.quietly(System.Logger.Level.INFO, "shm: the server said it opened a same-host channel, and no "
                    + "process of our user brought our nonce: the connection stays on tcp", null);
            return false;
        }
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

    @Override
    public synchronized boolean takePeerRing() {
        if (closed) {
            return false;
        }
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

    @Override
    public synchronized void close() {
        closed = true;
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
