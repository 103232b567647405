package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.CLayouts.*;
import static java.lang.foreign.FunctionDescriptor.of;

import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

/**
 * The few libc calls the verbs provider needs around the verbs: {@code poll} for bounded waits
 * on completion-channel, async-event and rdma_cm fds, and {@code fcntl} to make them non-blocking.
 */
public final class LibC {
    private static final NativeLibraries.Loaded LIB = NativeLibraries.libc();

    /** {@code struct pollfd}. */
    public static final StructLayout POLLFD = struct("pollfd",
            INT.withName("fd"),
            U16.withName("events"),
            U16.withName("revents"));

    public static final short POLLIN = 1, POLLERR = 8, POLLHUP = 16;
    private static final int F_GETFL = 3, F_SETFL = 4, O_NONBLOCK = 04000;

    private static final MethodHandle POLL = Downcalls.withErrno(LIB, "poll", of(INT, PTR, U64, INT));
    private static final MethodHandle FCNTL = java.lang.foreign.Linker.nativeLinker().downcallHandle(
            LIB.find("fcntl").orElseThrow(), of(INT, INT, INT, INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));

    private LibC() {
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
