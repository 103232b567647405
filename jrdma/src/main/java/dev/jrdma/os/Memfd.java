package dev.jrdma.os;

import static dev.jrdma.os.CLayouts.INT;
import static dev.jrdma.os.CLayouts.PTR;
import static dev.jrdma.os.CLayouts.SIZE_T;
import static dev.jrdma.os.CLayouts.U64;
import static java.lang.foreign.FunctionDescriptor.of;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Anonymous shared memory files ({@code memfd_create}) sealed against changing size, and mapping
 * one shared. This is how two processes of one host share memory without a path: the owner
 * creates and seals the file and hands the descriptor over a Unix socket ({@link UnixSockets});
 * the other side checks the seals and the size before mapping, because a file that can shrink
 * under a mapping turns every access past its new end into SIGBUS, which would kill the JVM.
 */
public final class Memfd {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MEMFD_CREATE = LINKER.defaultLookup().find("memfd_create")
            .map(s -> LINKER.downcallHandle(s, of(INT, PTR, INT), Linker.Option.captureCallState("errno")))
            .orElse(null);
    private static final MethodHandle FTRUNCATE = NativeCalls.withErrno("ftruncate", of(INT, INT, U64));
    private static final MethodHandle LSEEK = NativeCalls.withErrno("lseek", of(U64, INT, U64, INT));
    private static final MethodHandle FCNTL = LINKER.downcallHandle(NativeCalls.symbol("fcntl"), of(INT, INT, INT, INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    private static final MethodHandle MMAP = NativeCalls.withErrno("mmap", of(PTR, PTR, SIZE_T, INT, INT, INT, U64));
    private static final MethodHandle MUNMAP = NativeCalls.withErrno("munmap", of(INT, PTR, SIZE_T));

    private static final int MFD_CLOEXEC = 1, MFD_ALLOW_SEALING = 2;
    private static final int F_ADD_SEALS = 1033, F_GET_SEALS = 1034;
    public static final int F_SEAL_SEAL = 1, F_SEAL_SHRINK = 2, F_SEAL_GROW = 4, F_SEAL_WRITE = 8;
    /** The seals a shared memfd must carry: its size is fixed for good. */
    public static final int SIZE_SEALS = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    private static final int PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, SEEK_END = 2;
    public static final long PAGE = 4096;

    private Memfd() {
    }

    /** Whether this libc has {@code memfd_create} (glibc 2.27). */
    public static boolean available() {
        return MEMFD_CREATE != null;
    }

    /**
     * A new memfd of {@code bytes} (a multiple of {@link #PAGE}), zeroed, sealed with
     * {@link #SIZE_SEALS}, close-on-exec. Throws naming the call that failed.
     */
    public static int createSealed(String name, long bytes) {
        return create(name, bytes, SIZE_SEALS);
    }

    /** A new memfd of {@code bytes}, zeroed, close-on-exec, with {@code seals} added (0: none, and sealing stays open). */
    public static int create(String name, long bytes, int seals) {
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) MEMFD_CREATE.invokeExact(Errno.capture(), a.allocateFrom(name), MFD_CLOEXEC | MFD_ALLOW_SEALING);
            if (fd < 0) {
                throw Errno.failure("memfd_create", bytes + " bytes");
            }
            if ((int) FTRUNCATE.invokeExact(Errno.capture(), fd, bytes) < 0
                    || (seals != 0 && (int) FCNTL.invokeExact(Errno.capture(), fd, F_ADD_SEALS, seals) < 0)) {
                RuntimeException e = Errno.failure("ftruncate/F_ADD_SEALS", "memfd " + fd + " of " + bytes + " bytes");
                LibC.close(fd);
                throw e;
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The seals of {@code fd}, or -errno (EINVAL: not a memfd, nor any file that takes seals). */
    public static int seals(int fd) {
        try {
            int s = (int) FCNTL.invokeExact(Errno.capture(), fd, F_GET_SEALS, 0);
            return s < 0 ? -Errno.last() : s;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The size of the file {@code fd} in bytes, or -errno. */
    public static long size(int fd) {
        try {
            long s = (long) LSEEK.invokeExact(Errno.capture(), fd, 0L, SEEK_END);
            return s < 0 ? -Errno.last() : s;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * Maps {@code length} bytes at {@code offset} (a multiple of {@link #PAGE}) of {@code fd}
     * shared into this process, read-only or read-write; unmapped when {@code arena} closes.
     * Null with the errno in {@code error[0]} when the kernel refuses (a read-only or
     * write-sealed file mapped writable: EACCES/EPERM).
     */
    public static MemorySegment mapShared(int fd, long offset, long length, boolean writable, Arena arena, int[] error) {
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(Errno.capture(), MemorySegment.NULL, length,
                    writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, offset);
            if (p.address() == -1L) {
                error[0] = Errno.last();
                return null;
            }
            long address = p.address();
            return p.reinterpret(length, arena, ignored -> unmap(address, length));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    private static void unmap(long address, long length) {
        try {
            int ignored = (int) MUNMAP.invokeExact(Errno.capture(), MemorySegment.ofAddress(address), length);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }
}
