package dev.jrdma.provider.shm;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.os.Errno;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.UnixSockets;
import dev.jrdma.provider.tcp.SameHostChannel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A {@link SameHostChannel} over a connected Unix sequenced-packet socket: each record is one
 * packet of five longs (native order: both ends are this host), with at most one descriptor. A
 * packet of another size, or with anything but one descriptor attached, is not a record: it is
 * dropped (its descriptors closed) and reads as none, which the caller treats as a lie.
 */
final class ShmChannel implements SameHostChannel {
    static final int RECORD = 5 * 8;

    private final int fd;
    private final long peerPid;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment buffer = arena.allocate(RECORD, 8);
    /** The record the rendezvous read to find who this channel is for; receive() returns it first. */
    private Record first;
    private boolean closed;
    private boolean broken;

    ShmChannel(int fd, long peerPid) {
        this.fd = fd;
        this.peerPid = peerPid;
    }

    void pushBack(Record r) {
        first = r;
    }

    @Override
    public long peerPid() {
        return peerPid;
    }

    @Override
    public synchronized boolean send(long kind, long a, long b, long c, long d, int passFd) {
        if (closed) {
            return false;
        }
        buffer.set(JAVA_LONG, 0, kind);
        buffer.set(JAVA_LONG, 8, a);
        buffer.set(JAVA_LONG, 16, b);
        buffer.set(JAVA_LONG, 24, c);
        buffer.set(JAVA_LONG, 32, d);
        return UnixSockets.send(fd, buffer, passFd) == RECORD;
    }

    @Override
    public synchronized Record receive() {
        Record r = first;
        if (r != null) {
            first = null;
            return r;
        }
        if (closed) {
            return null;
        }
        UnixSockets.Received got = UnixSockets.receive(fd, buffer);
        if (got.length() != RECORD || got.truncated()) {
            if (got.fd() >= 0) {
                Sockets.close(got.fd());
            }
            if (got.length() != -Errno.EAGAIN && got.length() != -Errno.EINTR) {
                broken = true;   // the end (0), an error, or a packet that is no record
            }
            return null;
        }
        return new Record(buffer.get(JAVA_LONG, 0), buffer.get(JAVA_LONG, 8), buffer.get(JAVA_LONG, 16),
                buffer.get(JAVA_LONG, 24), buffer.get(JAVA_LONG, 32), got.fd());
    }

    @Override
    public synchronized boolean broken() {
        return broken || closed;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Sockets.close(fd);
        if (first != null && first.fd() >= 0) {
            Sockets.close(first.fd());
        }
        first = null;
        arena.close();
    }

    @Override
    public String toString() {
        return "same-host channel to pid " + peerPid + (closed ? " (closed)" : "");
    }
}
