package dev.jrdma.os;

import static java.lang.foreign.FunctionDescriptor.of;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Unix-domain sequenced-packet sockets in the abstract namespace, the credentials the kernel
 * records for their peer ({@code SO_PEERCRED}), and passing a file descriptor over them
 * ({@code SCM_RIGHTS}). Two processes of one host prove to each other who they are this way: the
 * uid and pid come from the kernel, never from a message. All sockets are non-blocking and
 * close-on-exec; received descriptors are close-on-exec too.
 *
 * <p>Abstract names live in the network namespace, not the file system: nothing is left behind
 * when a process dies, and a process in another network namespace cannot reach them.
 */
public final class UnixSockets {
    private static final int AF_UNIX = 1, SOCK_SEQPACKET = 5, SO_PEERCRED = 17, SCM_RIGHTS = 1;
    private static final int MSG_TRUNC = 0x20, MSG_CTRUNC = 0x8, MSG_CMSG_CLOEXEC = 0x40000000;
    /** {@code sun_path} of {@code struct sockaddr_un}: the abstract name follows a leading NUL. */
    public static final int MAX_NAME = 107;
    /** {@code struct cmsghdr} (len, level, type) and one int: CMSG_LEN(4), CMSG_SPACE(4). */
    private static final long CMSG_LEN_ONE_FD = 20, CMSG_SPACE_ONE_FD = 24;
    private static final long MSG_CONTROL = 32, MSG_CONTROLLEN = 40, MSG_FLAGS = 48;

    private static final MethodHandle SOCKET = NativeCalls.withErrno("socket", of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle BIND = NativeCalls.withErrno("bind", of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle LISTEN = NativeCalls.withErrno("listen", of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CONNECT = NativeCalls.withErrno("connect", of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle GETSOCKOPT = NativeCalls.withErrno("getsockopt",
            of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle SENDMSG = NativeCalls.withErrno("sendmsg", of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle RECVMSG = NativeCalls.withErrno("recvmsg", of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle GETEUID = NativeCalls.plain("geteuid", of(JAVA_INT));

    /** The kernel's word on a connected peer: {@code struct ucred}. */
    public record Credentials(int pid, int uid, int gid) {
    }

    /** One packet received: its length (or -errno; 0: the peer closed), the descriptor it carried (-1: none). */
    public record Received(long length, int fd, boolean truncated) {
    }

    private UnixSockets() {
    }

    /** This process's effective uid: what SO_PEERCRED reports of it to its peers. */
    public static int uid() {
        try {
            return (int) GETEUID.invokeExact();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** A listening socket bound to the abstract name {@code name}; throws naming the call that failed. */
    public static int listen(byte[] name, int backlog) {
        int fd = socket();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = address(name, a);
            if ((int) BIND.invokeExact(Errno.capture(), fd, sa, (int) sa.byteSize()) < 0
                    || (int) LISTEN.invokeExact(Errno.capture(), fd, backlog) < 0) {
                RuntimeException e = Errno.failure("bind/listen", "abstract unix socket");
                Sockets.close(fd);
                throw e;
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * Connects to the abstract name {@code name}: the connected socket, or -errno (ECONNREFUSED:
     * nobody listens there, in this network namespace; EAGAIN: its backlog is full).
     */
    public static int connect(byte[] name) {
        int fd = socket();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = address(name, a);
            if ((int) CONNECT.invokeExact(Errno.capture(), fd, sa, (int) sa.byteSize()) < 0) {
                int errno = Errno.last();
                Sockets.close(fd);
                return -errno;
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The credentials of the process at the other end of {@code fd}, as the kernel recorded them at connect/listen. */
    public static Credentials peer(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cred = a.allocate(12, 4);
            MemorySegment len = a.allocate(JAVA_INT);
            len.set(JAVA_INT, 0, 12);
            if ((int) GETSOCKOPT.invokeExact(Errno.capture(), fd, Sockets.SOL_SOCKET, SO_PEERCRED, cred, len) < 0) {
                throw Errno.failure("getsockopt", "SO_PEERCRED of fd " + fd);
            }
            return new Credentials(cred.get(JAVA_INT, 0), cred.get(JAVA_INT, 4), cred.get(JAVA_INT, 8));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * Sends {@code payload} as one packet, with {@code passFd} attached when it is not negative:
     * bytes sent, or -errno (EAGAIN: the peer's buffer is full; EPIPE: it closed).
     */
    public static long send(int fd, MemorySegment payload, int passFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment msg = a.allocate(Sockets.MSGHDR_SIZE, 8);
            MemorySegment iov = a.allocate(Sockets.IOVEC_SIZE, 8);
            Sockets.iovec(iov, 0, payload.address(), payload.byteSize());
            Sockets.setIov(msg, iov.address(), 1);
            if (passFd >= 0) {
                MemorySegment control = a.allocate(CMSG_SPACE_ONE_FD, 8);
                control.set(JAVA_LONG, 0, CMSG_LEN_ONE_FD);
                control.set(JAVA_INT, 8, Sockets.SOL_SOCKET);
                control.set(JAVA_INT, 12, SCM_RIGHTS);
                control.set(JAVA_INT, 16, passFd);
                msg.set(JAVA_LONG, MSG_CONTROL, control.address());
                msg.set(JAVA_LONG, MSG_CONTROLLEN, CMSG_SPACE_ONE_FD);
            }
            long n = (long) SENDMSG.invokeExact(Errno.capture(), fd, msg, Sockets.MSG_DONTWAIT | Sockets.MSG_NOSIGNAL);
            return n >= 0 ? n : -Errno.last();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * Receives one packet into {@code into} without waiting. A packet that carried exactly one
     * descriptor returns it; one that carried more comes back {@code truncated} with every
     * descriptor that was installed closed here (and those that did not fit never installed),
     * and so does anything but SCM_RIGHTS or a packet longer than {@code into}. The caller owns
     * (and must close) a returned descriptor in every case.
     */
    public static Received receive(int fd, MemorySegment into) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment msg = a.allocate(Sockets.MSGHDR_SIZE, 8);
            MemorySegment iov = a.allocate(Sockets.IOVEC_SIZE, 8);
            MemorySegment control = a.allocate(CMSG_SPACE_ONE_FD, 8);
            Sockets.iovec(iov, 0, into.address(), into.byteSize());
            Sockets.setIov(msg, iov.address(), 1);
            msg.set(JAVA_LONG, MSG_CONTROL, control.address());
            msg.set(JAVA_LONG, MSG_CONTROLLEN, CMSG_SPACE_ONE_FD);
            long n = (long) RECVMSG.invokeExact(Errno.capture(), fd, msg, Sockets.MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
            if (n < 0) {
                return new Received(-Errno.last(), -1, false);
            }
            int flags = msg.get(JAVA_INT, MSG_FLAGS);
            long controlLength = msg.get(JAVA_LONG, MSG_CONTROLLEN);
            int passed = -1;
            boolean odd = false;
            if (controlLength >= 16) {
                // CMSG_SPACE(4) has room for two ints: the kernel installs as many descriptors as
                // fit. Keep one when exactly one came; close every other one.
                long cmsgLength = control.get(JAVA_LONG, 0);
                if (control.get(JAVA_INT, 8) == Sockets.SOL_SOCKET && control.get(JAVA_INT, 12) == SCM_RIGHTS
                        && cmsgLength >= CMSG_LEN_ONE_FD && cmsgLength <= controlLength) {
                    int count = (int) ((cmsgLength - 16) / 4);
                    for (int k = 0; k < count; k++) {
                        int installed = control.get(JAVA_INT, 16 + 4L * k);
                        if (count == 1) {
                            passed = installed;
                        } else {
                            Sockets.close(installed);
                        }
                    }
                    odd = count != 1;
                } else {
                    odd = true;
                }
            }
            return new Received(n, passed, odd || (flags & (MSG_TRUNC | MSG_CTRUNC)) != 0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    private static int socket() {
        try {
            int fd = (int) SOCKET.invokeExact(Errno.capture(), AF_UNIX,
                    SOCK_SEQPACKET | Sockets.SOCK_NONBLOCK | Sockets.SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw Errno.failure("socket", "AF_UNIX SOCK_SEQPACKET");
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code struct sockaddr_un} for an abstract name: family, a NUL, the name; its length counts only those. */
    private static MemorySegment address(byte[] name, Arena a) {
        if (name.length == 0 || name.length > MAX_NAME) {
            throw new IllegalArgumentException("an abstract unix socket name of " + name.length + " bytes");
        }
        MemorySegment sa = a.allocate(2 + 1 + name.length, 2);
        sa.set(JAVA_SHORT, 0, (short) AF_UNIX);
        sa.set(JAVA_BYTE, 2, (byte) 0);
        MemorySegment.copy(name, 0, sa, JAVA_BYTE, 3, name.length);
        return sa;
    }
}
