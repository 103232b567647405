package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;

import dev.jrdma.os.Sockets;
import dev.jrdma.spi.AccessFlags;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The same-host mapping protocol of one tcp queue pair (shm), outside the request sequence:
 * MAP_REQUEST asks where the peer's region with a key lives, MAP_RESPONSE answers (or says it
 * is not shareable), UNMAP tells the peer a region closed, UNMAP_ACK says the peer no longer
 * reaches it. Every answer is checked: a key this peer was not granted (one that names nothing,
 * another peer's, or memory no peer may reach) is answered "not shareable", the same answer
 * whichever it is, and counted ({@link TcpQueuePair#MAX_UNGRANTED_KEY_MAP_REQUESTS}); a
 * MAP_RESPONSE nobody asked for or an UNMAP from a peer not on this host ends the connection.
 */
final class SameHostMapping {
    private final TcpQueuePair qp;
    private int ungrantedKeyMapRequests;   // progress thread

    SameHostMapping(TcpQueuePair qp) {
        this.qp = qp;
    }

    /** The peer let go of our region {@code rkey}: its registration may be reused when all peers have. */
    void unmapAcknowledged(int rkey) {
        SameHostPeer peer = qp.sameHost;
        TcpMemoryRegistration r = null;
        if (peer != null) {
            synchronized (qp.txLock) {
                r = peer.unmapAcknowledged(rkey);
            }
        }
        if (r != null) {
            r.peerLetGo();
        }
    }

    /** The peer closed its region {@code rkey}: drop our mapping of it, and say so (UNMAP_ACK). */
    boolean unmapped(int rkey) {
        SameHostPeer peer = qp.sameHost;
        if (peer == null) {
            qp.malformed("UNMAP from a peer that is not on this host");
            return false;
        }
        synchronized (qp.txLock) {
            // Direct operations run under the transmit lock: none is under way, none comes after.
            peer.remove(rkey);
            if (!qp.state.closed()) {
                qp.frameHeader(UNMAP_ACK, 0, 0, 0, 0, 0, rkey, 0, 0, 0);
                qp.finishTransmit();
            }
        }
        return true;
    }


    /** The peer asks where our region {@code f.rkey} lives, to map it: tell it (or that it is not shareable). */
    boolean answerMap(FrameHeader f) {
        SameHostPeer peer = qp.sameHost;
        TcpSameHost support = peer == null ? null : peer.support;
        TcpMemoryRegistration r = qp.registrations.lookupFrom(qp.scope, f.rkey);
        // Memory registered for local access only (the pool's chunks) is never mapped by a peer,
        // and a key of it is one the peer was not granted, as much as a key that names nothing:
        // both count alike, so that the count tells a peer nothing about which keys are live.
        boolean granted = r != null
                && (r.access() & (AccessFlags.REMOTE_READ | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0;
        if (!granted) {
            if (!qp.registrations.everIssued(f.rkey)) {
                qp.offended("a MAP_REQUEST for key 0x" + Integer.toHexString(f.rkey) + ", which was never issued");
            }
            if (++ungrantedKeyMapRequests > TcpQueuePair.MAX_UNGRANTED_KEY_MAP_REQUESTS) {
                // An honest peer asks only for keys it was given: one closed since is answered
                // "not shareable", and the operation behind it fails with a remote access error,
                // ending the connection. A second such request is a search for keys.
                // Not an offence by itself (two regions closed under an honest peer's requests): a
                // key never issued was counted as one above.
                qp.failConnection(ungrantedKeyMapRequests + " MAP_REQUESTs named keys it was not granted (probing for keys)");
                return false;
            }
        }
        // Entered while its descriptor is found and sent: closing the region waits for that,
        // so its memfd (and the descriptor number) cannot be freed and reused meanwhile.
        boolean entered = support != null && granted && r.memory().byteSize() > 0 && r.enter();
        try {
            long[] where = entered ? support.locate(r.memory()) : null;
            synchronized (qp.txLock) {
                boolean sent = false;
                if (where != null && !qp.state.closed()) {
                    // Listed first, then checked: a close either sees this peer (and sends it
                    // UNMAP) or is seen here (and nothing is sent).
                    r.sharedWith(qp);
                    // The descriptor goes first, on the channel: it waits there when the frame arrives.
                    sent = !r.isClosed() && peer.channel.send(SameHostChannel.MAP, f.rkey, where[1],
                            r.memory().byteSize(), 0, (int) where[0]);
                }
                if (sent) {
                    qp.frameHeader(MAP_RESPONSE, 0, 0, 0, r.access(), r.memory().address(), f.rkey, 0,
                            r.memory().byteSize(), 0);
                } else {
                    qp.frameHeader(MAP_RESPONSE, 0, 1, 0, 0, 0, f.rkey, 0, 0, 0);
                }
                qp.finishTransmit();
            }
        } finally {
            if (entered) {
                r.exit();
            }
        }
        return true;
    }


    /**
     * The peer said where its region lives: map it, so that later operations on it are done
     * here. False (the connection ends) for an answer nobody asked for.
     */
    boolean mapped(FrameHeader f) {
        SameHostPeer peer = qp.sameHost;
        boolean asked;
        synchronized (qp.txLock) {
            asked = peer != null && peer.answered(f.rkey);
        }
        if (!asked) {
            qp.malformed("a MAP_RESPONSE for key 0x" + Integer.toHexString(f.rkey) + ", which was not asked about");
            return false;
        }
        if (f.status != 0 || f.compareAdd <= 0) {
            return true;   // not shareable: it stays on the socket (and is not asked again)
        }
        // The descriptor must be waiting on the channel, for this key and this length.
        SameHostChannel.Record where = peer.channel.receive();
        if (where == null || where.kind() != SameHostChannel.MAP || where.a() != f.rkey || where.c() != f.compareAdd
                || where.fd() < 0) {
            if (where != null && where.fd() >= 0) {
                Sockets.close(where.fd());
            }
            qp.malformed("a MAP_RESPONSE for key 0x" + Integer.toHexString(f.rkey)
                    + " without its memory on the same-host channel");
            return false;
        }
        int access = (int) f.seq;
        boolean writable = (access & (AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0;
        Arena a = Arena.ofShared();
        MemorySegment m;
        try {
            m = peer.support.map(where.fd(), where.b(), f.compareAdd, writable, a);
        } catch (RuntimeException e) {
            m = null;
        }
        if (m == null) {
            a.close();
            return true;   // refused (logged): the region stays on the socket
        }
        synchronized (qp.txLock) {
            if (qp.state.closed()) {
                a.close();
                return true;
            }
            peer.add(f.rkey, new SameHostPeer.PeerRegion(f.addr, f.compareAdd, access, m, a));
        }
        return true;
    }


    /**
     * Our region {@code r} was closed: the peer must stop reaching it directly, and say when it
     * has (UNMAP_ACK: then {@link TcpMemoryRegistration#peerLetGo}). False when the connection
     * is over (nothing was sent; the peer no longer posts on it). Any thread.
     */
    boolean sendUnmap(TcpMemoryRegistration r) {
        synchronized (qp.txLock) {
            SameHostPeer peer = qp.sameHost;
            if (!qp.state.closed() && qp.state.started() && !qp.state.peerGone() && peer != null) {
                peer.awaitUnmap(r);
                qp.frameHeader(UNMAP, 0, 0, 0, 0, 0, r.rkey(), 0, 0, 0);
                qp.finishTransmit();
                return true;
            }
            return false;
        }
    }


    /** The connection is over: the peer posts no more on it, so it holds none of our regions. */
    void releaseAwaitingUnmap() {
        SameHostPeer peer = qp.sameHost;
        if (peer == null) {
            return;
        }
        List<TcpMemoryRegistration> all;
        synchronized (qp.txLock) {
            all = peer.takeAwaitingUnmap();
        }
        for (TcpMemoryRegistration r : all) {
            r.peerLetGo();
        }
    }
}
