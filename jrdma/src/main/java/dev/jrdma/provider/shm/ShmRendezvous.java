package dev.jrdma.provider.shm;

import dev.jrdma.os.Errno;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.UnixSockets;
import dev.jrdma.provider.tcp.SameHostChannel;
import dev.jrdma.spi.Log;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where servers of this host find a client of ours to prove themselves to: an abstract Unix
 * socket with a random name, one per shm device. A server connects and sends a RING_OFFER whose
 * first two values are the nonce of the client's HELLO; {@link #arrived} finds the channel by it.
 * Only connections of our own uid are kept (the kernel says whose they are); the rest are closed
 * and logged. A server connects and sends before it answers the client's HELLO, so when the
 * ACCEPT arrives the channel is in the kernel's queue or taken from it already: a drain takes
 * the whole queue. A connection manager watches the socket too ({@link #tend}), so an idle
 * process drains it as well.
 *
 * <p>The name is no secret ({@code /proc/net/unix} lists it), and anyone may send a server a
 * HELLO naming it, so servers of our uid may come with offers nobody here asked for. Only a
 * nonce this side handed out ({@link #expect}) for a HELLO of its own, not yet used and not
 * expired, is kept; any other offer, or one carrying a descriptor, is closed as it is read. A
 * drain runs before every HELLO and at every ACCEPT, so unasked offers do not pile up in the
 * kernel's queue between connects. Bounded: at most {@link #MAX_WAITING} connections wait
 * (each holds one descriptor), each for at most {@link #WAIT_NANOS}, and at most
 * {@link #MAX_EXPECTED} nonces, each for at most {@link #EXPECT_NANOS}.
 */
final class ShmRendezvous implements AutoCloseable {
    static final String PREFIX = "jrdma-shm.";
    static final int BACKLOG = 4096, MAX_WAITING = 4096, MAX_EXPECTED = 65536;
    static final long WAIT_NANOS = 10_000_000_000L;
    /**
     * How long a nonce is expected after its HELLO went: longer than any connect's time-out, so
     * that a server slow to take the HELLO (its backlog full) still gets its offer through.
     */
    static final long EXPECT_NANOS = 120_000_000_000L;
    /**
     * The kernel's overflow uid (its default, {@code /proc/sys/kernel/overflowuid}): what
     * SO_PEERCRED reports for a process of another user namespace whose uid has no mapping in
     * ours. A process that itself runs as it cannot tell such a stranger from its own user, so
     * it trusts nobody over shm.
     */
    static final int OVERFLOW_UID = 65534;
    private static final java.util.concurrent.atomic.AtomicBoolean OVERFLOW_REPORTED = new java.util.concurrent.atomic.AtomicBoolean();

    /** Whether a process of uid {@code ours} may trust peers of its own uid; says once why not. */
    static boolean trustsOwnUid(int ours) {
        if (ours != OVERFLOW_UID) {
            return true;
        }
        if (OVERFLOW_REPORTED.compareAndSet(false, true)) {
            Log.quietly(System.Logger.Level.INFO, "shm: this process runs as uid " + OVERFLOW_UID + ", the kernel's "
                    + "overflow uid, which is also how a process of another user namespace appears: a peer of "
                    + "our own user cannot be told from a stranger, so connections stay on tcp", null);
        }
        return false;
    }
    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] name;
    private final int listenFd;
    private final int uid = UnixSockets.uid();
    /** Accepted connections whose first record has not come yet. */
    private final List<Waiting> unread = new ArrayList<>();
    /** Nonces of our HELLOs whose offer has not come, with when they were handed out. */
    private final Map<Nonce, Long> expected = new LinkedHashMap<>();
    /** Offers refused (unasked, or with a descriptor), for tests. */
    private long refusedOffers;
    /** Channels whose RING_OFFER came, by nonce, until a client endpoint claims them. */
    private final Map<Nonce, Waiting> byNonce = new LinkedHashMap<>();
    private final Set<Integer> reportedUids = new HashSet<>();
    private boolean closed;

    private record Nonce(long low, long high) {
    }

    private record Waiting(ShmChannel channel, long since) {
    }

    private ShmRendezvous(byte[] name, int listenFd) {
        this.name = name;
        this.listenFd = listenFd;
    }

    static ShmRendezvous open() {
        byte[] random = new byte[16];
        RANDOM.nextBytes(random);
        StringBuilder s = new StringBuilder(PREFIX);
        for (byte b : random) {
            s.append(Character.forDigit((b >> 4) & 15, 16)).append(Character.forDigit(b & 15, 16));
        }
        byte[] name = s.toString().getBytes(StandardCharsets.US_ASCII);
        return new ShmRendezvous(name, UnixSockets.listen(name, BACKLOG));
    }

    byte[] name() {
        return name.clone();
    }

    /** The listening socket, for a connection manager's epoll (see {@link #tend}). */
    int fd() {
        return listenFd;
    }

    /** Its socket is readable: drain it now (unasked offers closed, asked ones kept), not at the next HELLO. */
    synchronized void tend() {
        if (!closed) {
            drain();
        }
    }

    /** Whether {@code name} is one a rendezvous of jrdma would have: nobody is asked to connect anywhere else. */
    static boolean wellFormed(byte[] name) {
        if (name.length != PREFIX.length() + 32) {
            return false;
        }
        for (int i = 0; i < name.length; i++) {
            int c = name[i];
            boolean ok = i < PREFIX.length() ? c == PREFIX.charAt(i) : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** Server side: connects to a client's rendezvous; null when it is not a process of our uid, or not there. */
    static ShmChannel connect(byte[] name, int ourUid) {
        if (!trustsOwnUid(ourUid)) {
            return null;
        }
        if (!wellFormed(name)) {
            Log.limited("shm.notJrdma", System.Logger.Level.INFO, "shm: the client named a rendezvous that is not jrdma's; "
                    + "the connection stays on tcp");
            return null;
        }
        int fd = UnixSockets.connect(name);
        if (fd < 0) {
            Log.limited("shm.unreachable", System.Logger.Level.INFO, "shm: the client's rendezvous "
                    + new String(name, StandardCharsets.US_ASCII) + " is not reachable (" + Errno.name(-fd)
                    + ": another network namespace, or not on this host); the connection stays on tcp");
            return null;
        }
        UnixSockets.Credentials peer = UnixSockets.peer(fd);
        if (peer.uid() != ourUid) {
            Sockets.close(fd);
            Log.limited("shm.otherUid", System.Logger.Level.INFO, "shm: the client (pid " + peer.pid() + ") runs as uid "
                    + peer.uid() + ", not as ours (" + ourUid + "): shm trusts only its own user, so the connection stays on tcp");
            return null;
        }
        return new ShmChannel(fd, peer.pid());
    }

    /** Client side: a fresh nonce for one HELLO; an offer is kept only if it brings one of these (within {@link #EXPECT_NANOS}). */
    synchronized byte[] expect() {
        byte[] nonce = new byte[16];
        RANDOM.nextBytes(nonce);
        if (closed) {
            return nonce;
        }
        drain();
        ByteBuffer b = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
        expected.put(new Nonce(b.getLong(), b.getLong()), System.nanoTime());
        if (expected.size() > MAX_EXPECTED) {
            Iterator<Nonce> oldest = expected.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
        return nonce;
    }

    /** Client side: the channel a server opened with {@code nonce}, or null when none (of our uid) did. */
    synchronized ShmChannel arrived(byte[] nonce) {
        if (closed || nonce == null || nonce.length != 16) {
            return null;
        }
        drain();
        ByteBuffer b = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
        Waiting w = byNonce.remove(new Nonce(b.getLong(), b.getLong()));
        return w == null ? null : w.channel;
    }

    private void drain() {
        long now = System.nanoTime();
        for (int i = 0; i < BACKLOG; i++) {
            int s = Sockets.accept(listenFd);
            if (s < 0) {
                break;
            }
            UnixSockets.Credentials peer = UnixSockets.peer(s);
            if (peer.uid() != uid || uid == OVERFLOW_UID) {
                Sockets.close(s);
                if (reportedUids.size() < 16 && reportedUids.add(peer.uid())) {
                    Log.quietly(System.Logger.Level.INFO, "shm: a process of uid " + peer.uid() + " (pid " + peer.pid()
                            + ") connected to our rendezvous; shm trusts only its own user (" + uid + "), so it was "
                            + "refused and its connection stays on tcp", null);
                }
                continue;
            }
            unread.add(new Waiting(new ShmChannel(s, peer.pid()), now));
        }
        for (Iterator<Waiting> it = unread.iterator(); it.hasNext(); ) {
            Waiting w = it.next();
            SameHostChannel.Record r = w.channel.receive();
            if (r == null) {
                if (w.channel.broken() || now - w.since > WAIT_NANOS) {
                    it.remove();
                    w.channel.close();
                }
                continue;
            }
            it.remove();
            Nonce nonce = new Nonce(r.a(), r.b());
            if (r.kind() != SameHostChannel.RING_OFFER || r.fd() >= 0 || expected.remove(nonce) == null) {
                if (r.fd() >= 0) {
                    Sockets.close(r.fd());
                }
                w.channel.close();
                refused();
                continue;
            }
            w.channel.pushBack(r);
            byNonce.put(nonce, new Waiting(w.channel, now));
        }
        for (Iterator<Long> it = expected.values().iterator(); it.hasNext(); ) {
            if (now - it.next() > EXPECT_NANOS) {
                it.remove();
            } else {
                break;   // in the order handed out
            }
        }
        for (Iterator<Waiting> it = byNonce.values().iterator(); it.hasNext(); ) {
            Waiting w = it.next();
            if (now - w.since > WAIT_NANOS) {
                it.remove();
                w.channel.close();
            }
        }
        while (unread.size() > MAX_WAITING) {
            unread.removeFirst().channel.close();
        }
        if (byNonce.size() > MAX_WAITING) {
            for (Iterator<Waiting> it = byNonce.values().iterator(); it.hasNext() && byNonce.size() > MAX_WAITING; ) {
                it.next().channel.close();
                it.remove();
            }
        }
    }

    /** Counts a refused offer and says so (a flood must not flood the log: {@link Log#limited}). */
    private void refused() {
        refusedOffers++;
        Log.limited("shm.unaskedOffer", System.Logger.Level.INFO, "shm: refused an offer at our rendezvous that "
                + "brought no nonce of ours (or a descriptor): a server was sent a HELLO naming us by someone else, "
                + "or is not jrdma");
    }

    /** Offers refused so far: for tests. */
    synchronized long refusedOffers() {
        return refusedOffers;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Sockets.close(listenFd);
        unread.forEach(w -> w.channel.close());
        byNonce.values().forEach(w -> w.channel.close());
        unread.clear();
        byNonce.clear();
        expected.clear();
    }
}
