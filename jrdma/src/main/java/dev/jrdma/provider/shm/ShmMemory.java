package dev.jrdma.provider.shm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.Sockets;
import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.provider.tcp.TcpSameHost;
import dev.jrdma.os.Errno;
import dev.jrdma.spi.ShareableMemory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * Shareable memory for the shm provider: memfds ({@code memfd_create}) mapped shared here, a
 * memfd per allocation. The registered-memory pool asks for whole chunks (4 MiB, or one large
 * region), so this is a dozen system calls per chunk, not per buffer. A peer of this host opens
 * it as {@code /proc/PID/fd/FD} (which the kernel allows to the same user) and maps it too; the
 * pages live as long as either side maps them, so a peer that dies or unmaps late never leaves
 * the other with freed memory, and nothing is left in /dev/shm when a process dies.
 */
final class ShmMemory implements TcpSameHost {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MEMFD_CREATE = LINKER.defaultLookup().find("memfd_create")
            .map(s -> LINKER.downcallHandle(s, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                    Linker.Option.captureCallState("errno")))
            .orElse(null);
    private static final MethodHandle FTRUNCATE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("ftruncate").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG),
            Linker.Option.captureCallState("errno"));
    private static final int MFD_CLOEXEC = 1;

    /** Our memfds by the address they are mapped at here. */
    private final Map<Long, Shared> byAddress = new ConcurrentSkipListMap<>();

    static ProviderUnavailableException unavailabilityCause() {
        if (MEMFD_CREATE == null) {
            return new ProviderUnavailableException(ShmProvider.NAME, "libc has no memfd_create (Linux 3.17, glibc 2.27)");
        }
        if (!java.nio.file.Files.isDirectory(Path.of("/proc/self/fd"))) {
            return new ProviderUnavailableException(ShmProvider.NAME, "/proc is not mounted: peers open memory through it");
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
        return memfd(size);
    }

    @Override
    public void close() {
        // Nothing of its own: each allocation is closed by its owner.
    }

    /** A new memfd of at least {@code size} bytes (whole pages), mapped here. */
    private Shared memfd(long size) {
        int fd;
        try (Arena a = Arena.ofConfined()) {
            fd = (int) MEMFD_CREATE.invokeExact(Errno.capture(), a.allocateFrom("jrdma"), MFD_CLOEXEC);
            if (fd < 0) {
                throw Errno.failure("memfd_create", size + " bytes");
            }
            long pages = (size + 4095) & ~4095L;
            if ((int) FTRUNCATE.invokeExact(Errno.capture(), fd, pages) < 0) {
                RuntimeException e = Errno.failure("ftruncate", "memfd " + fd + " to " + pages + " bytes");
                Sockets.close(fd);
                throw e;
            }
            Arena arena = Arena.ofShared();
            try (FileChannel ch = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, pages, arena);
                Shared s = new Shared(fd, arena, seg, size);
                byAddress.put(seg.address(), s);
                return s;
            } catch (IOException | RuntimeException e) {
                arena.close();
                Sockets.close(fd);
                throw new RdmaException("shm: mapping memfd " + fd + " failed: " + e, e);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
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
    public MemorySegment map(long pid, int fd, long offset, long length, boolean writable, Arena arena) {
        // Map whole pages around the region, then slice it out.
        long start = offset & ~4095L;
        long end = offset + length;
        try (FileChannel ch = writable
                ? FileChannel.open(Path.of("/proc/" + pid + "/fd/" + fd), StandardOpenOption.READ, StandardOpenOption.WRITE)
                : FileChannel.open(Path.of("/proc/" + pid + "/fd/" + fd), StandardOpenOption.READ)) {
            MemorySegment m = ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, start,
                    end - start, arena);
            return m.asSlice(offset - start, length);
        } catch (IOException e) {
            return null;   // not reachable (another user, /proc hidden): the region keeps the socket path
        }
    }
}
