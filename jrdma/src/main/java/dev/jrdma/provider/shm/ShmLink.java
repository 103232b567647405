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
 * the proven channel they were exchanged on (the client's ring first, the server's once it has
 * the client's: a rendezvous gets no descriptor before its owner claimed the handshake). This side writes its own ring (a sealed memfd made
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
    /** Why the peer's ring was last refused (see {@link #whyNoPeerRing}). */
    private String noRing = "no reason recorded";

    ShmLink(ShmMemory support) {
        this.support = support;
        this.txMemory = support.allocate(SharedByteRing.HEADER + RING_BYTES);
        if (txMemory != null) {
            // The peer starts "asleep" on our ring: our first publish rings the doorbell. A client
            // maps the server's ring only after the server sent it, and may be asleep by then.
            new SharedByteRing(txMemory.segment()).arm();
        }
    }

    @Override
    public synchronized boolean ready() {
        return channel != null && txMemory != null;
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
    public synchronized boolean offer(byte[] rendezvous, byte[] nonce, long binding) {
        if (closed || txMemory == null) {
            return false;
        }
        SameHostChannel ch = support.connect(rendezvous);
        if (ch == null) {
            return false;   // logged: another user, another network namespace, or not a rendezvous
        }
        ByteBuffer n = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
        if (!ch.send(SameHostChannel.RING_OFFER, n.getLong(), n.getLong(), binding, 0, -1)) {
            ch.close();
            return false;
        }
        channel = ch;
        return true;
    }

    @Override
    public synchronized boolean join(byte[] nonce, long binding) {
        if (closed) {
            return false;
        }
        SameHostChannel ch = support.arrived(nonce);
        if (ch == null) {
            Log.quietly(System.Logger.Level.INFO, "shm: the server said it opened a same-host channel, and no "
                    + "process of our user brought our nonce: the connection stays on tcp", null);
            return false;
        }
        // The rendezvous let this channel through only with a RING_OFFER for our nonce and no descriptor.
        SameHostChannel.Record offer = ch.receive();
        if (offer != null && offer.fd() >= 0) {
            Sockets.close(offer.fd());
        }
        if (offer != null && offer.kind() == SameHostChannel.RING_OFFER && offer.c() != binding) {
            Log.quietly(System.Logger.Level.WARNING, "shm: a process of our user (pid " + ch.peerPid() + ") offered a "
                    + "same-host channel for another TCP connection than ours: our handshake was relayed to it by the "
                    + "server; refused, the connection stays on tcp", null);
            ch.close();
            return false;
        }
        if (offer == null || offer.kind() != SameHostChannel.RING_OFFER || offer.fd() >= 0 || !sendRing(ch)) {
            ch.close();
            return false;
        }
        channel = ch;
        return true;
    }

    @Override
    public synchronized boolean acceptPeerRing() {
        if (closed || channel == null) {
            return false;
        }
        return receivePeerRing() == 1 && sendRing(channel);
    }

    @Override
    public synchronized int pollPeerRing() {
        if (rxRing != null) {
            return 1;
        }
        if (closed || channel == null) {
            return refused(closed ? "this side's link is closed" : "no same-host channel");
        }
        return receivePeerRing();
    }

    @Override
    public synchronized String whyNoPeerRing() {
        return noRing;
    }

    /** Notes why the peer's ring is refused (see {@link #whyNoPeerRing}); returns -1. */
    private int refused(String why) {
        noRing = why;
        return -1;
    }

    /** Sends the ring this side writes on {@code ch}; false when it cannot go. */
    private boolean sendRing(SameHostChannel ch) {
        long[] ring = txLocation();
        return ring != null && ch.send(SameHostChannel.RING, 0, 0, ring[1], ring[2], (int) ring[0]);
    }

    /** The peer's RING, if one waits: 1 mapped, 0 nothing yet, -1 something else or refused. */
    private int receivePeerRing() {
        SameHostChannel.Record r = channel.receive();
        if (r == null) {
            return channel.broken() ? refused("the same-host channel broke (the peer closed it, or sent garbage)") : 0;
        }
        if (r.kind() != SameHostChannel.RING) {
            if (r.fd() >= 0) {
                Sockets.close(r.fd());
            }
            return refused("a record of kind " + r.kind() + " came first, not RING");
        }
        return mapPeerRing(r) ? 1 : -1;
    }

    /** Maps the peer's ring (it writes, this side reads) that {@code r} handed over; false when it cannot be. */
    private boolean mapPeerRing(SameHostChannel.Record r) {
        long offset = r.c(), size = r.d();
        if (r.fd() < 0) {
            refused("the RING record carried no descriptor (none sent, or this process could not take one)");
            return false;
        }
        if (size <= SharedByteRing.HEADER || size > MAX_PEER_RING) {
            Sockets.close(r.fd());
            refused("a ring of " + size + " bytes");
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
            refused("its memfd could not be mapped (not sealed, out of range, or mmap failed: see the shm warning)");
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
