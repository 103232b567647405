package dev.jrdma.provider.shm;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.os.Errno;
import dev.jrdma.os.Memfd;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.UnixSockets;
import dev.jrdma.provider.tcp.SameHostChannel;
import dev.jrdma.provider.tcp.SameHostLink;
import dev.jrdma.provider.tcp.TcpSameHost;
import dev.jrdma.spi.Log;
import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * Shareable memory for the shm provider, and the proof that a peer shares this host. Memory that
 * {@code Rdma.allocate} hands out lives in memfds sealed against changing size, one per
 * allocation (the registered-memory pool asks for whole chunks of 4 MiB, or one large region, so
 * this is a few system calls per chunk, not per buffer). A proven peer receives the descriptor
 * itself over its {@link SameHostChannel} and maps it; nothing is ever opened by a path, and
 * what a peer hands over is mapped only when it is a memfd whose size is sealed and covers the
 * range (a file that could shrink would turn an access past its end into SIGBUS). The pages live
 * as long as either side maps them, so a peer that dies or unmaps late never leaves the other
 * with freed memory, and nothing is left behind when a process dies.
 */
final class ShmMemory implements TcpSameHost {
    /** Our memfds by the address they are mapped at here. */
    private final Map<Long, Shared> byAddress = new ConcurrentSkipListMap<>();
    private final int uid = UnixSockets.uid();
    private ShmRendezvous rendezvous;   // opened on the first outgoing connection
    private boolean closed;

    static ProviderUnavailableException unavailabilityCause() {
        if (!Memfd.available()) {
            return new ProviderUnavailableException(ShmProvider.NAME, "libc has no memfd_create (Linux 3.17, glibc 2.27)");
        }
        return null;
    }

    /** One memfd, mapped here; freed when its allocation is closed. */
    private final class Shared implements ShareableMemory {
        final int fd;
        final Arena arena;
        final MemorySegment segment;
        private final MemorySegment asked;
        private boolean closed;

        Shared(int fd, Arena arena, MemorySegment segment, long size) {
            this.fd = fd;
            this.arena = arena;
            this.segment = segment;
            this.asked = segment.asSlice(0, size);
        }

        @Override
        public MemorySegment segment() {
            return asked;
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            byAddress.remove(segment.address(), this);
            arena.close();
            Sockets.close(fd);
        }
    }

    @Override
    public ShareableMemory allocate(long size) {
        long pages = (size + Memfd.PAGE - 1) & -Memfd.PAGE;
        int fd = Memfd.createSealed("jrdma", pages);
        Arena arena = Arena.ofShared();
        int[] error = new int[1];
        MemorySegment m = Memfd.mapShared(fd, 0, pages, true, arena, error);
        if (m == null) {
            arena.close();
            Sockets.close(fd);
            throw Errno.failure("mmap", error[0], "memfd of " + pages + " bytes");
        }
        Shared s = new Shared(fd, arena, m, size);
        byAddress.put(m.address(), s);
        return s;
    }

    @Override
    public long[] locate(MemorySegment memory) {
        long at = memory.address();
        Map.Entry<Long, Shared> e = ((ConcurrentSkipListMap<Long, Shared>) byAddress).floorEntry(at);
        if (e == null) {
            return null;
        }
        Shared s = e.getValue();
        long offset = at - s.segment.address();
        if (offset + memory.byteSize() > s.segment.byteSize()) {
            return null;
        }
        return new long[] {s.fd, offset};
    }

    @Override
    public MemorySegment map(int fd, long offset, long length, boolean writable, Arena arena) {
        try {
            int seals = Memfd.seals(fd);
            long size = Memfd.size(fd);
            if (seals < 0 || (seals & Memfd.SIZE_SEALS) != Memfd.SIZE_SEALS) {
                Log.quietly(System.Logger.Level.WARNING, "shm: refused a descriptor from a peer: "
                        + (seals < 0 ? "not a memfd (" + Errno.name(-seals) + ")" : "its size is not sealed"), null);
                return null;
            }
            if (offset < 0 || length <= 0 || size < 0 || offset > size || length > size - offset) {
                Log.quietly(System.Logger.Level.WARNING, "shm: refused a descriptor from a peer: " + length
                        + " bytes at " + offset + " of a memfd of " + size, null);
                return null;
            }
            // Map whole pages around the range, then slice it out.
            long start = offset & -Memfd.PAGE;
            long end = Math.min(size, (offset + length + Memfd.PAGE - 1) & -Memfd.PAGE);
            int[] error = new int[1];
            MemorySegment m = Memfd.mapShared(fd, start, end - start, writable, arena, error);
            if (m == null) {
                Log.quietly(System.Logger.Level.WARNING, "shm: could not map a peer's memfd: " + Errno.name(error[0]),
                        null);
                return null;
            }
            return m.asSlice(offset - start, length);
        } finally {
            Sockets.close(fd);
        }
    }

    @Override
    public synchronized byte[] rendezvousName() {
        if (closed || !ShmRendezvous.trustsOwnUid(uid)) {
            return new byte[0];
        }
        if (rendezvous == null) {
            rendezvous = ShmRendezvous.open();
        }
        return rendezvous.name();
    }

    @Override
    public synchronized int watchFd() {
        return rendezvous == null ? -1 : rendezvous.fd();
    }

    @Override
    public void tend() {
        ShmRendezvous r;
        synchronized (this) {
            r = rendezvous;
        }
        if (r != null) {
            r.tend();
        }
    }

    @Override
    public byte[] newNonce() {
        ShmRendezvous r;
        synchronized (this) {
            r = rendezvous;
        }
        if (r == null) {
            throw new IllegalStateException("no rendezvous: rendezvousName() first");
        }
        return r.expect();
    }

    @Override
    public SameHostLink link() {
        return new ShmLink(this);
    }

    /** Server side of a link: a channel to a client's rendezvous, when it is a process of our uid. */
    SameHostChannel connect(byte[] name) {
        return ShmRendezvous.connect(name, uid);
    }

    /** Client side of a link: the channel a server opened with {@code nonce}, or null. */
    SameHostChannel arrived(byte[] nonce) {
        ShmRendezvous r;
        synchronized (this) {
            r = rendezvous;
        }
        return r == null ? null : r.arrived(nonce);
    }

    @Override
    public synchronized void close() {
        // Allocations are closed by their owners; the rendezvous goes with the device.
        closed = true;
        if (rendezvous != null) {
            rendezvous.close();
            rendezvous = null;
        }
    }
}
