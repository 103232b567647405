package dev.jrdma.os;

import static dev.jrdma.os.CLayouts.*;
import static java.lang.foreign.FunctionDescriptor.of;

import java.lang.foreign.Linker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

/**
 * The few libc calls the verbs provider needs around the verbs: {@code poll} for bounded waits
 * on completion-channel, async-event and rdma_cm fds, and {@code fcntl} to make them non-blocking.
 */
public final class LibC {

    /** {@code struct pollfd}. */
    public static final StructLayout POLLFD = struct("pollfd",
            INT.withName("fd"),
            U16.withName("events"),
            U16.withName("revents"));

    public static final short POLLIN = 1, POLLERR = 8, POLLHUP = 16;
    private static final int F_GETFL = 3, F_SETFL = 4, O_NONBLOCK = 04000;

    private static final MethodHandle POLL = NativeCalls.withErrno("poll", of(INT, PTR, U64, INT));
    private static final MethodHandle FCNTL = java.lang.foreign.Linker.nativeLinker().downcallHandle(
            NativeCalls.symbol("fcntl"), of(INT, INT, INT, INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));

    private static final MethodHandle EVENTFD = NativeCalls.withErrno("eventfd", of(INT, U32, INT));
    private static final MethodHandle READ = NativeCalls.withErrno("read", of(SSIZE_T, INT, PTR, SIZE_T));
    private static final MethodHandle WRITE = NativeCalls.withErrno("write", of(SSIZE_T, INT, PTR, SIZE_T));
    private static final MethodHandle CLOSE = NativeCalls.withErrno("close", of(INT, INT));
    private static final MethodHandle SCHED_SETAFFINITY = NativeCalls.withErrno("sched_setaffinity", of(INT, INT, SIZE_T, PTR));
    private static final MethodHandle GETTID = NativeCalls.withErrno("gettid", of(INT));
    private static final MethodHandle GETRLIMIT = NativeCalls.withErrno("getrlimit", of(INT, INT, PTR));
    private static final MethodHandle MMAP = NativeCalls.withErrno("mmap", of(PTR, PTR, SIZE_T, INT, INT, INT, U64));
    private static final MethodHandle MUNMAP = NativeCalls.withErrno("munmap", of(INT, PTR, SIZE_T));
    private static final int PROT_READ = 1, PROT_WRITE = 2, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20, MAP_HUGETLB = 0x40000;
    private static final int RLIMIT_MEMLOCK = 8;
    private static final int EFD_NONBLOCK = 04000, EFD_CLOEXEC = 02000000;

    private LibC() {
    }

    /**
     * Waits up to {@code timeoutMs} (-1: forever) for any of the first {@code count} entries of a
     * {@link #POLLFD} array to become readable; returns how many are (0 on time-out or EINTR).
     * Each entry's fd and events must be set; revents is read with {@link #revents}.
     */
    public static int poll(MemorySegment pollfds, int count, int timeoutMs) {
        try {
            int n = (int) POLL.invokeExact(Errno.capture(), pollfds, (long) count, timeoutMs);
            if (n < 0) {
                int errno = Errno.last();
                if (errno == Errno.EINTR) {
                    return 0;
                }
                throw Errno.failure("poll", errno, count + " fds");
            }
            return n;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Sets entry {@code index} of a {@link #POLLFD} array to wait for {@code fd} readable. */
    public static void pollEntry(MemorySegment pollfds, int index, int fd) {
        long base = index * POLLFD.byteSize();
        pollfds.set(INT, base, fd);
        pollfds.set(U16, base + 4, POLLIN);
        pollfds.set(U16, base + 6, (short) 0);
    }

    /** The revents of entry {@code index}, after {@link #poll}. */
    public static int revents(MemorySegment pollfds, int index) {
        return Short.toUnsignedInt(pollfds.get(U16, index * POLLFD.byteSize() + 6));
    }

    /** {@code eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)}: a wake-up fd for an IO thread blocked in poll. */
    public static int eventFd() {
        try {
            int fd = (int) EVENTFD.invokeExact(Errno.capture(), 0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (fd < 0) {
                throw Errno.failure("eventfd", null);
            }
            return fd;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Adds one to an eventfd's counter (wakes a poller). {@code buf}: 8 bytes, any thread's. */
    public static void eventFdSignal(int fd, MemorySegment buf) {
        buf.set(U64, 0, 1L);
        try {
            long n = (long) WRITE.invokeExact(Errno.capture(), fd, buf, 8L);
            if (n < 0 && Errno.last() != Errno.EAGAIN) {
                throw Errno.failure("write", "eventfd " + fd);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Resets an eventfd's counter; true when it had been signalled. */
    public static boolean eventFdDrain(int fd, MemorySegment buf) {
        try {
            long n = (long) READ.invokeExact(Errno.capture(), fd, buf, 8L);
            if (n < 0 && Errno.last() != Errno.EAGAIN) {
                throw Errno.failure("read", "eventfd " + fd);
            }
            return n == 8;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Pins the calling thread to {@code cpu}: {@code sched_setaffinity(0, ...)} with a mask of that
     * one CPU (a {@code cpu_set_t} of 1024 bits, glibc's size).
     */
    public static void pinCurrentThread(int cpu) {
        if (cpu < 0 || cpu >= 1024) {
            throw new IllegalArgumentException("cpu " + cpu + " is outside 0..1023 (cpu_set_t)");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment mask = a.allocate(128);
            mask.set(java.lang.foreign.ValueLayout.JAVA_BYTE, cpu / 8, (byte) (1 << (cpu % 8)));
            if ((int) SCHED_SETAFFINITY.invokeExact(Errno.capture(), 0, 128L, mask) < 0) {
                throw Errno.failure("sched_setaffinity", "cpu " + cpu);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * RLIMIT_MEMLOCK of this process: {soft, hard} in bytes, -1 for unlimited (RLIM_INFINITY):
     * how much memory it may pin, registrations included, unless it has CAP_IPC_LOCK.
     */
    public static long[] memlockLimit() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment rl = a.allocate(U64, 2);
            if ((int) GETRLIMIT.invokeExact(Errno.capture(), RLIMIT_MEMLOCK, rl) < 0) {
                throw Errno.failure("getrlimit", "RLIMIT_MEMLOCK");
            }
            return new long[] {rl.getAtIndex(U64, 0), rl.getAtIndex(U64, 1)};
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * {@code bytes} (a multiple of the huge page size) of anonymous memory backed by huge pages
     * (mmap MAP_HUGETLB), zeroed; its address, or -errno when the kernel has none to give
     * (ENOMEM: vm.nr_hugepages reserves too few).
     */
    public static long mmapHugePages(long bytes) {
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(Errno.capture(), MemorySegment.NULL, bytes,
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0L);
            return p.address() == -1L ? -Errno.last() : p.address();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * {@code bytes} of anonymous memory (mmap, rounded up to whole pages), zero, for as long as
     * {@code arena} is open (its close unmaps it). Unlike an arena's own allocation, which fills
     * it with zeros, nothing touches it: a page becomes resident only once it is written, so a
     * buffer that a connection may need but has not used yet costs address space, not memory.
     *
     * @throws dev.jrdma.exceptions.NativeRdmaException when the kernel has no room (ENOMEM)
     */
    public static MemorySegment mapAnonymous(long bytes, Arena arena) {
        long size = (Math.max(1, bytes) + 4095) & ~4095L;
        long address;
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(Errno.capture(), MemorySegment.NULL, size,
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
            address = p.address();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (address == -1L) {
            throw Errno.failure("mmap", Errno.last(), size + " bytes of anonymous memory");
        }
        return MemorySegment.ofAddress(address).reinterpret(bytes, arena, s -> munmap(address, size));
    }

    public static void munmap(long address, long bytes) {
        try {
            if ((int) MUNMAP.invokeExact(Errno.capture(), MemorySegment.ofAddress(address), bytes) < 0) {
                throw Errno.failure("munmap", bytes + " bytes at 0x" + Long.toHexString(address));
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The calling thread's kernel id (its /proc/self/task/TID). */
    public static int gettid() {
        try {
            return (int) GETTID.invokeExact(Errno.capture());
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    public static void close(int fd) {
        try {
            if ((int) CLOSE.invokeExact(Errno.capture(), fd) < 0) {
                throw Errno.failure("close", "fd " + fd);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Waits up to {@code timeoutMs} for {@code fd} to become readable. Returns true when it is
     * (or has an error or hang-up to report), false on time-out; EINTR counts as a time-out.
     */
    public static boolean pollIn(int fd, int timeoutMs, MemorySegment pollfd) {
        pollfd.set(INT, 0, fd);
        pollfd.set(U16, 4, POLLIN);
        pollfd.set(U16, 6, (short) 0);
        try {
            int n = (int) POLL.invokeExact(Errno.capture(), pollfd, 1L, timeoutMs);
            if (n < 0) {
                int errno = Errno.last();
                if (errno == Errno.EINTR) {
                    return false;
                }
                throw Errno.failure("poll", errno, "fd " + fd);
            }
            return n > 0;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Sets O_NONBLOCK on {@code fd}, so that a get-event call after a spurious wake-up returns EAGAIN. */
    public static void setNonBlocking(int fd) {
        try {
            int flags = (int) FCNTL.invokeExact(Errno.capture(), fd, F_GETFL, 0);
            if (flags < 0) {
                throw Errno.failure("fcntl", "F_GETFL on fd " + fd);
            }
            if ((int) FCNTL.invokeExact(Errno.capture(), fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                throw Errno.failure("fcntl", "F_SETFL O_NONBLOCK on fd " + fd);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
