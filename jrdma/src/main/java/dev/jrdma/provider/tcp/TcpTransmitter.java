package dev.jrdma.provider.tcp;

import dev.jrdma.os.AddressSpace;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The sending half of a tcp queue pair's socket. Frames (a header, and a payload straight out
 * of registered memory) are gathered into one {@code sendmsg}; what the socket does not take at
 * once waits, in order, before anything newer. Waiting bytes are copied into a backlog, so our
 * own payloads are never referenced after the call that queued them returns (their owner may
 * close them then), except a large answer to the peer's READ: that is sent on from the exposed
 * registration itself ({@link #addPayload}'s {@code stream}), entered for each send, so a peer
 * that asks for a gigabyte and reads none of it costs no gigabyte here; if the region closes
 * meanwhile, the connection ends (its READ cannot be answered). Not thread-safe: the queue pair
 * serialises its users (posting threads and the progress thread) with a lock.
 */
final class TcpTransmitter implements AutoCloseable {
    /** Frames gathered into one sendmsg at most; more are sent in several. */
    static final int MAX_FRAMES = 64;
    /** Waiting pieces (see below) at most; past it, waiting bytes are copied whatever they are. */
    private static final int MAX_PIECES = 512;
    /** The pieces' ring's first size (it grows to {@link #MAX_PIECES}). */
    private static final int FIRST_PIECES = 8;
    /** Waiting pieces gathered into one sendmsg at most. */
    private static final int PIECES_PER_SEND = 32;
    /** A READ answer's unsent rest at least this large is sent on from its registration, not copied. */
    static final long STREAM_MIN = 64 * 1024;
    private static final int MAX_IOVS = 2 * MAX_FRAMES + PIECES_PER_SEND;

    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment headers = arena.allocate((long) TcpFrameDescriptor.HEADER_SIZE * MAX_FRAMES, 8);
    private final MemorySegment iovs = arena.allocate(Sockets.IOVEC_SIZE * MAX_IOVS, 8);
    private final MemorySegment msghdr = arena.allocate(Sockets.MSGHDR_SIZE, 8);
    private final long[] iovBase = new long[MAX_IOVS];
    private final long[] iovLength = new long[MAX_IOVS];
    /** The registration an iovec may be sent on from, if the socket does not take it now (null: copy it). */
    private final TcpMemoryRegistration[] iovStream = new TcpMemoryRegistration[MAX_IOVS];
    private final TcpMemoryRegistration[] fenced = new TcpMemoryRegistration[MAX_FRAMES + PIECES_PER_SEND];
    private int fencedCount;
    private int frames;
    private int iovCount;

    // What the socket has not taken yet, in order: pieces, each either bytes copied into the
    // backlog (pieceAddress -1; the copied pieces' bytes lie in order in [backlogStart,
    // backlogEnd) of backlog) or the rest of a READ answer, sent on from its registration.
    private MemorySegment backlog;
    private Arena backlogArena;
    private long backlogStart, backlogEnd;
    // The pieces' ring starts small and doubles up to MAX_PIECES: most connections never have
    // more than a few pieces waiting, and an idle one none (the full ring is 10 KiB of heap).
    private long[] pieceAddress = new long[FIRST_PIECES];
    private long[] pieceLength = new long[FIRST_PIECES];
    private TcpMemoryRegistration[] pieceRegistration = new TcpMemoryRegistration[FIRST_PIECES];
    private int pieceFirst, pieceCount;
    private long pendingBytes;
    /** The errno sending failed with (EPIPE, ECONNRESET...), or 0. */
    private int failed;

    // Ring mode (same host): frames go into this side's ring, the socket only rings the peer.
    private FrameRing ring;
    private long produced;
    private final MemorySegment bell = arena.allocate(Sockets.MSGHDR_SIZE + Sockets.IOVEC_SIZE + 8, 8);

    TcpTransmitter(int fd) {
        this.fd = fd;
        Sockets.setIov(msghdr, iovs.address(), 0);
    }

    /** From now on frames go into {@code ring} (this side's), read by the peer. */
    void useRing(FrameRing ring) {
        this.ring = ring;
        this.produced = ring.produced();
        MemorySegment iov = bell.asSlice(Sockets.MSGHDR_SIZE, Sockets.IOVEC_SIZE);
        Sockets.iovec(iov, 0, bell.address() + Sockets.MSGHDR_SIZE + Sockets.IOVEC_SIZE, 1);
        Sockets.setIov(bell, iov.address(), 1);
    }

    /** One byte on the socket: wakes the peer's IO thread (its epoll watches the socket). EAGAIN is fine: bytes are pending. */
    void doorbell() {
        if (failed == 0) {
            long n = Sockets.sendmsg(fd, bell.address());
            if (n < 0 && n != -Errno.EAGAIN && n != -Errno.EINTR) {
                failed = (int) -n;
            }
        }
    }

    /** Room for another frame before {@link #flush} must be called. */
    boolean full() {
        return frames == MAX_FRAMES;
    }

    /** Header of the next frame (48 bytes to fill with {@link TcpFrameDescriptor#write}), queued as is. */
    MemorySegment header() {
        return headers;
    }

    /** Queues the header just written at {@link #nextHeaderOffset()}. */
    void addHeader() {
        queuedTotal += TcpFrameDescriptor.HEADER_SIZE;
        addIov(headers.address() + (long) frames * TcpFrameDescriptor.HEADER_SIZE, TcpFrameDescriptor.HEADER_SIZE);
        frames++;
    }

    long nextHeaderOffset() {
        return (long) frames * TcpFrameDescriptor.HEADER_SIZE;
    }

    /**
     * Queues {@code length} bytes at {@code address} of {@code registration}, which the caller
     * has {@link TcpMemoryRegistration#enter entered}; it is exited at {@link #flush}. With
     * {@code stream} (a READ answer), what the socket does not take is sent on from the
     * registration later instead of being copied.
     */
    void addPayload(long address, long length, TcpMemoryRegistration registration, boolean stream) {
        if (length > 0) {
            queuedTotal += length;
            addIov(address, length);
            iovStream[iovCount - 1] = stream ? registration : null;
        }
        if (registration != null) {
            fenced[fencedCount++] = registration;
        }
    }

    private void addIov(long base, long length) {
        iovBase[iovCount] = base;
        iovLength[iovCount] = length;
        iovStream[iovCount] = null;
        iovCount++;
    }

    /** Nothing waits to be sent. */
    boolean idle() {
        return pieceCount == 0 && iovCount == 0;
    }

    /** Bytes the socket (or ring) has not taken yet: copied into the backlog, or still in a registration. */
    long backlogBytes() {
        return pendingBytes;
    }

    /** Bytes ever queued (headers and payloads), and ever taken by the socket or ring (or dropped on failure). */
    private long queuedTotal, sentTotal;

    /** The position, in bytes ever queued, of the end of what is queued so far. */
    long queuedTotal() {
        return queuedTotal;
    }

    /** Bytes ever taken by the socket or ring (a change says the peer is reading). */
    long sentTotal() {
        return sentTotal;
    }


    int failedErrno() {
        return failed;
    }

    /**
     * Sends what waits and then the queued frames, as far as the socket takes them, and keeps
     * the rest waiting (copied, or a READ answer's reference). Returns true when everything went out.
     */
    boolean flush() {
        try {
            if (failed != 0) {
                return dropAll();
            }
            int pieces = Math.min(pieceCount, PIECES_PER_SEND);
            int n = gatherWaiting(pieces);
            if (n < 0) {
                // The region closed before its READ answer was all sent: that READ cannot be answered.
                failed = Errno.EIO;
                failure = "the region a READ was being answered from was closed";
                return dropAll();
            }
            // New frames go only behind everything that waited: all of it must be in this send.
            boolean framesToo = pieces == pieceCount;
            if (framesToo) {
                n = gatherFrames(n);
            }
            long total = gathered;
            if (total == 0) {
                return true;
            }
            long sent = ring != null ? toRing(n) : sendIov(n);
            if (sent < 0) {
                int errno = (int) -sent;
                if (errno != Errno.EAGAIN && errno != Errno.EINTR) {
                    failed = errno;
                    return dropAll();
                }
                sent = 0;
            }
            sentTotal += sent;
            long skip = taken(sent);
            if (framesToo && sent == total) {
                if (ring != null) {
                    ring.waitForRoom(false);
                }
                return true;
            }
            if (ring != null) {
                ring.waitForRoom(true);   // the peer rings when it has read some
            }
            keepUnsentFrames(framesToo ? skip : 0);
            return false;
        } finally {
            iovCount = 0;
            frames = 0;
            for (int i = 0; i < fencedCount; i++) {
                fenced[i].exit();
                fenced[i] = null;
            }
            fencedCount = 0;
        }
    }

    /** Bytes in the iovecs of the send being gathered. */
    private long gathered;

    /**
     * Puts the first {@code pieces} waiting pieces into the iovecs (a READ answer's registration
     * entered, and fenced until the send is done); returns how many iovecs, or -1 when a
     * registration closed meanwhile.
     */
    private int gatherWaiting(int pieces) {
        int n = 0;
        gathered = 0;
        long copied = backlogStart;
        for (int k = 0; k < pieces; k++) {
            int p = (pieceFirst + k) % pieceAddress.length;
            if (pieceAddress[p] < 0) {
                Sockets.iovec(iovs, n++, backlog.address() + copied, pieceLength[p]);
                copied += pieceLength[p];
            } else {
                TcpMemoryRegistration r = pieceRegistration[p];
                if (!r.enter()) {
                    return -1;
                }
                fenced[fencedCount++] = r;
                Sockets.iovec(iovs, n++, pieceAddress[p], pieceLength[p]);
            }
            gathered += pieceLength[p];
        }
        return n;
    }

    /** Adds the queued frames to the iovecs after the {@code n} there; returns the count. */
    private int gatherFrames(int n) {
        for (int i = 0; i < iovCount; i++) {
            Sockets.iovec(iovs, n++, iovBase[i], iovLength[i]);
            gathered += iovLength[i];
        }
        return n;
    }

    private long sendIov(int n) {
        Sockets.setIov(msghdr, iovs.address(), n);
        return Sockets.sendmsg(fd, msghdr.address());
    }

    /** Keeps what the socket did not take of the new frames ({@code skip}: bytes of them it took), behind what waits. */
    private void keepUnsentFrames(long skip) {
        for (int i = 0; i < iovCount; i++) {
            long len = iovLength[i];
            if (skip >= len) {
                skip -= len;
                continue;
            }
            keep(iovBase[i] + skip, len - skip, iovStream[i]);
            skip = 0;
        }
    }

    /** The connection cannot send any more (failed): what waits is dropped; "everything went out". */
    private boolean dropAll() {
        dropWaiting();
        sentTotal = queuedTotal;   // dropped: nothing waits any more
        return true;
    }

    /** The socket took {@code sent} bytes: the waiting pieces it covered go; returns what is left of it for the new frames. */
    private long taken(long sent) {
        while (pieceCount > 0 && sent > 0) {
            int p = pieceFirst;
            long n = Math.min(sent, pieceLength[p]);
            if (pieceAddress[p] < 0) {
                backlogStart += n;
            } else {
                pieceAddress[p] += n;
            }
            pieceLength[p] -= n;
            pendingBytes -= n;
            sent -= n;
            if (pieceLength[p] == 0) {
                pieceRegistration[p] = null;
                pieceFirst = (pieceFirst + 1) % pieceAddress.length;
                pieceCount--;
            }
        }
        if (pieceCount == 0) {
            backlogStart = backlogEnd = 0;
        }
        return sent;
    }

    /**
     * Keeps {@code count} unsent bytes at {@code from} waiting: as a reference into
     * {@code stream} when it is a READ answer's large rest and there is a piece for it, else copied.
     */
    private void keep(long from, long count, TcpMemoryRegistration stream) {
        pendingBytes += count;
        if (pieceCount == pieceAddress.length && pieceCount < MAX_PIECES) {
            growPieces();
        }
        if (stream != null && count >= STREAM_MIN && pieceCount < MAX_PIECES - 1) {   // a slot stays for a copy
            int p = (pieceFirst + pieceCount++) % pieceAddress.length;
            pieceAddress[p] = from;
            pieceLength[p] = count;
            pieceRegistration[p] = stream;
            return;
        }
        compactBacklog(count);
        MemorySegment.copy(AddressSpace.ALL, from, backlog, backlogEnd, count);
        backlogEnd += count;
        int last = (pieceFirst + pieceCount - 1) % pieceAddress.length;
        if (pieceCount > 0 && pieceAddress[last] < 0) {
            pieceLength[last] += count;   // follows the copied piece it joins
        } else if (pieceCount < MAX_PIECES) {
            int p = (pieceFirst + pieceCount++) % pieceAddress.length;
            pieceAddress[p] = -1;
            pieceLength[p] = count;
            pieceRegistration[p] = null;
        } else {
            throw new IllegalStateException("tcp: no slot for a copied piece (one is always kept)");
        }
    }

    /** Twice the pieces' ring, the waiting pieces first in it, in order. */
    private void growPieces() {
        int n = pieceAddress.length;
        long[] a = new long[n * 2], l = new long[n * 2];
        TcpMemoryRegistration[] r = new TcpMemoryRegistration[n * 2];
        for (int k = 0; k < pieceCount; k++) {
            int p = (pieceFirst + k) % n;
            a[k] = pieceAddress[p];
            l[k] = pieceLength[p];
            r[k] = pieceRegistration[p];
        }
        pieceAddress = a;
        pieceLength = l;
        pieceRegistration = r;
        pieceFirst = 0;
    }

    /** Nothing waits any more (the connection failed). */
    private void dropWaiting() {
        backlogStart = backlogEnd = 0;
        for (int k = 0; k < pieceCount; k++) {
            pieceRegistration[(pieceFirst + k) % pieceAddress.length] = null;
        }
        pieceFirst = pieceCount = 0;
        pendingBytes = 0;
    }

    /** Why sending failed, when the errno alone does not say (else null). */
    String failure() {
        return failure;
    }

    private String failure;

    /** Copies the first {@code count} iovecs into the ring as far as it has room, publishes; returns the bytes taken. */
    private long toRing(int count) {
        long taken = 0;
        for (int i = 0; i < count; i++) {
            long base = iovs.get(java.lang.foreign.ValueLayout.JAVA_LONG, i * Sockets.IOVEC_SIZE);
            long len = iovs.get(java.lang.foreign.ValueLayout.JAVA_LONG, i * Sockets.IOVEC_SIZE + 8);
            long n = ring.write(base, len, produced);
            if (n < 0) {
                return -Errno.EPROTO;   // the peer's consumed position is impossible: this connection ends
            }
            produced += n;
            taken += n;
            if (n < len) {
                break;
            }
        }
        if (taken > 0 && ring.publish(produced)) {
            doorbell();
        }
        return taken;
    }

    /** Moves the backlog to the front and makes room for {@code more} bytes after it. */
    private void compactBacklog(long more) {
        long kept = backlogEnd - backlogStart;
        long need = kept + more;
        if (backlog == null || backlog.byteSize() < need) {
            long size = Math.max(64 * 1024, Long.highestOneBit(Math.max(1, need - 1)) << 1);
            Arena a = Arena.ofShared();
            MemorySegment bigger = a.allocate(size, 64);
            if (kept > 0) {
                MemorySegment.copy(backlog, backlogStart, bigger, 0, kept);
            }
            if (backlogArena != null) {
                backlogArena.close();
            }
            backlogArena = a;
            backlog = bigger;
        } else if (backlogStart > 0 && kept > 0) {
            MemorySegment.copy(backlog, backlogStart, backlog, 0, kept);
        }
        backlogStart = 0;
        backlogEnd = kept;
    }

    @Override
    public void close() {
        for (int i = 0; i < fencedCount; i++) {
            fenced[i].exit();
        }
        fencedCount = 0;
        arena.close();
        if (backlogArena != null) {
            backlogArena.close();
        }
    }
}
