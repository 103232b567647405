package dev.jrdma.provider.tcp;

import dev.jrdma.os.Sockets;
import dev.jrdma.os.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The sending half of a tcp queue pair's socket. Frames (a header, and a payload straight out
 * of registered memory) are gathered into one {@code sendmsg}; what the socket does not take at
 * once is copied into a backlog, so a payload is never referenced after the call that queued
 * it returns (its owner may close it then), and the backlog goes out, in order, before anything
 * newer. Not thread-safe: the queue pair serialises its users (posting threads and the
 * progress thread) with a lock.
 */
final class TcpTransmitter implements AutoCloseable {
    /** Frames gathered into one sendmsg at most; more are sent in several. */
    static final int MAX_FRAMES = 64;
    private static final int MAX_IOVS = 2 * MAX_FRAMES + 1;

    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment headers = arena.allocate((long) TcpFrameDescriptor.HEADER_SIZE * MAX_FRAMES, 8);
    private final MemorySegment iovs = arena.allocate(Sockets.IOVEC_SIZE * MAX_IOVS, 8);
    private final MemorySegment msghdr = arena.allocate(Sockets.MSGHDR_SIZE, 8);
    private final long[] iovBase = new long[MAX_IOVS];
    private final long[] iovLength = new long[MAX_IOVS];
    private final TcpMemoryRegistration[] fenced = new TcpMemoryRegistration[MAX_FRAMES];
    private int fencedCount;
    private int frames;
    private int iovCount;

    // Bytes the socket has not taken yet, in order: [backlogStart, backlogEnd) of backlog.
    private MemorySegment backlog;
    private Arena backlogArena;
    private long backlogStart, backlogEnd;
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
     * has {@link TcpMemoryRegistration#enter entered}; it is exited at {@link #flush}.
     */
    void addPayload(long address, long length, TcpMemoryRegistration registration) {
        if (length > 0) {
            queuedTotal += length;
            addIov(address, length);
        }
        if (registration != null) {
            fenced[fencedCount++] = registration;
        }
    }

    private void addIov(long base, long length) {
        iovBase[iovCount] = base;
        iovLength[iovCount] = length;
        iovCount++;
    }

    /** Nothing waits to be sent. */
    boolean idle() {
        return backlogStart == backlogEnd && iovCount == 0;
    }

    /** Bytes the socket (or ring) has not taken yet, kept in the backlog. */
    long backlogBytes() {
        return backlogEnd - backlogStart;
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
     * Sends the backlog and then the queued frames, as far as the socket takes them, and
     * copies the rest into the backlog. Returns true when everything went out.
     */
    boolean flush() {
        try {
            if (failed != 0) {
                backlogStart = backlogEnd = 0;
                sentTotal = queuedTotal;   // dropped: nothing waits any more
                return true;
            }
            int n = 0;
            long backlogBytes = backlogEnd - backlogStart;
            if (backlogBytes > 0) {
                Sockets.iovec(iovs, n++, backlog.address() + backlogStart, backlogBytes);
            }
            long total = backlogBytes;
            for (int i = 0; i < iovCount; i++) {
                Sockets.iovec(iovs, n++, iovBase[i], iovLength[i]);
                total += iovLength[i];
            }
            if (total == 0) {
                return true;
            }
            long sent;
            if (ring != null) {
                sent = toRing(n);
            } else {
                Sockets.setIov(msghdr, iovs.address(), n);
                sent = Sockets.sendmsg(fd, msghdr.address());
            }
            if (sent < 0) {
                int errno = (int) -sent;
                if (errno != Errno.EAGAIN && errno != Errno.EINTR) {
                    failed = errno;
                    backlogStart = backlogEnd = 0;
                    sentTotal = queuedTotal;
                    return true;
                }
                sent = 0;
            }
            sentTotal += sent;
            if (sent == total) {
                backlogStart = backlogEnd = 0;
                if (ring != null) {
                    ring.waitForRoom(false);
                }
                return true;
            }
            if (ring != null) {
                ring.waitForRoom(true);   // the peer rings when it has read some
            }
            // Keep what was not sent: first the unsent end of the backlog, then the frames.
            long skip = sent;
            if (backlogBytes > 0) {
                long fromBacklog = Math.min(skip, backlogBytes);
                backlogStart += fromBacklog;
                skip -= fromBacklog;
            }
            compactBacklog(total - sent);
            for (int i = 0; i < iovCount; i++) {
                long len = iovLength[i];
                if (skip >= len) {
                    skip -= len;
                    continue;
                }
                long from = iovBase[i] + skip;
                long count = len - skip;
                skip = 0;
                MemorySegment.copy(MemorySegment.ofAddress(from).reinterpret(count), 0, backlog, backlogEnd, count);
                backlogEnd += count;
            }
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
