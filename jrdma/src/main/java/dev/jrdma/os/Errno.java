package dev.jrdma.os;

import dev.jrdma.exceptions.NativeRdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Map;

/**
 * errno capture and translation into {@link NativeRdmaException}.
 *
 * <p>Each thread has one capture segment, allocated once (control paths call this; hot paths
 * report errors through return values and never touch errno).
 */
public final class Errno {
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(
            java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));
    private static final MethodHandle STRERROR = NativeCalls.plain("strerror",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));

    public static final int EPERM = 1, ENOENT = 2, EINTR = 4, EIO = 5, EBADF = 9, EAGAIN = 11, ENOMEM = 12,
            EACCES = 13, EFAULT = 14, EBUSY = 16, EEXIST = 17, ENODEV = 19, EINVAL = 22, ENFILE = 23, EMFILE = 24,
            ENOSPC = 28,
            ENOSYS = 38, ENODATA = 61, ETIME = 62, EPROTO = 71, EOPNOTSUPP = 95, EADDRINUSE = 98,
            EADDRNOTAVAIL = 99, ENETUNREACH = 101, ECONNABORTED = 103, ECONNRESET = 104, ENOBUFS = 105,
            ETIMEDOUT = 110, ECONNREFUSED = 111, EHOSTUNREACH = 113, EALREADY = 114, EINPROGRESS = 115;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(EPERM, "EPERM"), Map.entry(ENOENT, "ENOENT"), Map.entry(EINTR, "EINTR"),
            Map.entry(EIO, "EIO"), Map.entry(EBADF, "EBADF"), Map.entry(EAGAIN, "EAGAIN"),
            Map.entry(ENOMEM, "ENOMEM"), Map.entry(EACCES, "EACCES"), Map.entry(EFAULT, "EFAULT"),
            Map.entry(EBUSY, "EBUSY"), Map.entry(EEXIST, "EEXIST"), Map.entry(ENODEV, "ENODEV"),
            Map.entry(EINVAL, "EINVAL"), Map.entry(ENFILE, "ENFILE"), Map.entry(EMFILE, "EMFILE"),
            Map.entry(ENOSPC, "ENOSPC"), Map.entry(ENOSYS, "ENOSYS"),
            Map.entry(ENODATA, "ENODATA"), Map.entry(ETIME, "ETIME"), Map.entry(EPROTO, "EPROTO"),
            Map.entry(EOPNOTSUPP, "EOPNOTSUPP"), Map.entry(EADDRINUSE, "EADDRINUSE"),
            Map.entry(EADDRNOTAVAIL, "EADDRNOTAVAIL"), Map.entry(ENETUNREACH, "ENETUNREACH"),
            Map.entry(ECONNABORTED, "ECONNABORTED"), Map.entry(ECONNRESET, "ECONNRESET"),
            Map.entry(ENOBUFS, "ENOBUFS"), Map.entry(ETIMEDOUT, "ETIMEDOUT"),
            Map.entry(ECONNREFUSED, "ECONNREFUSED"), Map.entry(EHOSTUNREACH, "EHOSTUNREACH"),
            Map.entry(EALREADY, "EALREADY"), Map.entry(EINPROGRESS, "EINPROGRESS"));

    private Errno() {
    }

    /** This thread's capture segment, to pass as the first argument of an errno-capturing handle. */
    public static MemorySegment capture() {
        return CAPTURE.get();
    }

    /** The errno the last errno-capturing call on this thread left. */
    public static int last() {
        return (int) ERRNO.get(CAPTURE.get(), 0L);
    }

    /** The symbolic name (EINVAL, ...) of an errno, or null. */
    public static String name(int errno) {
        return NAMES.get(errno);
    }

    /** libc's strerror text for an errno. */
    public static String describe(int errno) {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.equals(MemorySegment.NULL) ? "" : text.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "";
        }
    }

    /** An exception for {@code function} failing with {@code errno}. */
    public static NativeRdmaException failure(String function, int errno, String context) {
        return new NativeRdmaException(function, errno, name(errno), describe(errno), context);
    }

    /** An exception for {@code function} failing with this thread's captured errno. */
    public static NativeRdmaException failure(String function, String context) {
        return failure(function, last(), context);
    }

    /**
     * Checks the return value of a verb that returns 0 or an errno (most ibv_* do), or -1 with
     * errno set (librdmacm, some providers): both forms become one exception.
     */
    public static void check(int rc, String function, String context) {
        if (rc != 0) {
            throw failure(function, rc > 0 ? rc : last(), context);
        }
    }
}
