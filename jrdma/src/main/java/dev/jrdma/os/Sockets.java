package dev.jrdma.os;

import static java.lang.foreign.FunctionDescriptor.of;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;


import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.InetSocketAddress;

/**
 * The BSD socket and epoll calls of the tcp provider, through FFM. jrdma drives its sockets
 * itself rather than through NIO because its IO threads sleep in {@code poll(2)} on plain fds,
 * and because {@code sendmsg} can gather a frame header and a payload straight out of
 * registered memory in one call.
 *
 * <p>Data-path calls ({@link #recv}, {@link #sendmsg}) return the byte count, or minus the
 * errno; control calls throw {@link dev.jrdma.exceptions.NativeRdmaException} naming the call.
 */
public final class Sockets {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");

    public static final int AF_INET = 2, AF_INET6 = 10, SOCK_STREAM = 1, SOCK_NONBLOCK = 04000,
            SOCK_CLOEXEC = 02000000, SOL_SOCKET = 1, SO_REUSEADDR = 2, SO_ERROR = 4, SO_SNDBUF = 7,
            SO_RCVBUF = 8, IPPROTO_TCP = 6, TCP_NODELAY = 1, TCP_DEFER_ACCEPT = 9, MSG_DONTWAIT = 0x40, MSG_NOSIGNAL = 0x4000,
            SHUT_WR = 1, SHUT_RDWR = 2, SO_DOMAIN = 39, IPPROTO_IP = 0, IP_TOS = 1, IPPROTO_IPV6 = 41,
            IPV6_TCLASS = 67;
    /** Datagram sockets and IPv4 multicast ({@code <netinet/in.h>}). */
    public static final int SOCK_DGRAM = 2, MSG_TRUNC = 0x20, IP_MULTICAST_IF = 32, IP_MULTICAST_LOOP = 34,
            IP_ADD_MEMBERSHIP = 35, IP_DROP_MEMBERSHIP = 36;
    public static final int EPOLLIN = 0x1, EPOLLOUT = 0x4, EPOLLERR = 0x8, EPOLLHUP = 0x10, EPOLLRDHUP = 0x2000,
            EPOLL_CTL_ADD = 1, EPOLL_CTL_DEL = 2, EPOLL_CTL_MOD = 3, EPOLL_CLOEXEC = 02000000;
    /** {@code struct epoll_event} is packed on x86-64 (12 bytes) and naturally aligned elsewhere (16). */
    public static final long EPOLL_EVENT_SIZE = "amd64".equals(System.getProperty("os.arch"))
            || "x86_64".equals(System.getProperty("os.arch")) ? 12 : 16;
    private static final long EPOLL_DATA_OFFSET = EPOLL_EVENT_SIZE == 12 ? 4 : 8;
    /** epoll_event's data (packed: 4-byte aligned), a constant: a layout made per call is an object per call. */
    private static final ValueLayout.OfLong EPOLL_DATA = JAVA_LONG.withByteAlignment(4);
    /** {@code struct iovec}: base pointer, length. */
    public static final long IOVEC_SIZE = 16;
    /** {@code struct msghdr} on LP64: name, namelen, iov, iovlen, control, controllen, flags. */
    public static final long MSGHDR_SIZE = 56;
    private static final long MSG_IOV = 16, MSG_IOVLEN = 24;

    private static final MethodHandle SOCKET = NativeCalls.withErrno("socket", of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SETSOCKOPT = NativeCalls.withErrno("setsockopt",
            of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle GETSOCKOPT = NativeCalls.withErrno("getsockopt",
            of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle BIND = NativeCalls.withErrno("bind", of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle LISTEN = NativeCalls.withErrno("listen", of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ACCEPT4 = NativeCalls.withErrno("accept4", of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle CONNECT = NativeCalls.withErrno("connect", of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle GETSOCKNAME = NativeCalls.withErrno("getsockname", of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle GETPEERNAME = NativeCalls.withErrno("getpeername", of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle RECV = NativeCalls.withErrno("recv", of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RECVFROM = NativeCalls.withErrno("recvfrom",
            of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle SENDTO = NativeCalls.withErrno("sendto",
            of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SENDMSG = NativeCalls.withErrno("sendmsg", of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SHUTDOWN = NativeCalls.withErrno("shutdown", of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = NativeCalls.withErrno("close", of(JAVA_INT, JAVA_INT));
    private static final MethodHandle EPOLL_CREATE1 = NativeCalls.withErrno("epoll_create1", of(JAVA_INT, JAVA_INT));
    private static final MethodHandle EPOLL_CTL = NativeCalls.withErrno("epoll_ctl", of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle EPOLL_WAIT = NativeCalls.withErrno("epoll_wait", of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));

    private Sockets() {
    }

    /** A non-blocking, close-on-exec TCP socket of the family of {@code address}. */
    public static int socketFor(InetSocketAddress address) {
        int family = address.getAddress() instanceof java.net.Inet6Address ? AF_INET6 : AF_INET;
        try {
            int fd = (int) SOCKET.invokeExact(Errno.capture(), family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw Errno.failure("socket", "TCP socket for " + address);
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** A non-blocking, close-on-exec UDP socket of the family of {@code address}. */
    public static int datagramSocketFor(InetSocketAddress address) {
        int family = address.getAddress() instanceof java.net.Inet6Address ? AF_INET6 : AF_INET;
        try {
            int fd = (int) SOCKET.invokeExact(Errno.capture(), family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw Errno.failure("socket", "UDP socket for " + address);
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code setsockopt} of a struct option ({@code value}'s bytes); throws naming {@code what} and the errno. */
    public static void setOption(int fd, int level, int option, MemorySegment value, String what) {
        try {
            if ((int) SETSOCKOPT.invokeExact(Errno.capture(), fd, level, option, value, (int) value.byteSize()) < 0) {
                throw Errno.failure("setsockopt", what + " on fd " + fd);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void setIntOption(int fd, int level, int option, int value, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_INT);
            v.set(JAVA_INT, 0, value);
            if ((int) SETSOCKOPT.invokeExact(Errno.capture(), fd, level, option, v, 4) < 0) {
                throw Errno.failure("setsockopt", what + " on fd " + fd);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code getsockopt} of an int option; throws naming {@code what} and the errno. */
    public static int getIntOption(int fd, int level, int option, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_INT);
            MemorySegment len = a.allocate(JAVA_INT);
            len.set(JAVA_INT, 0, 4);
            if ((int) GETSOCKOPT.invokeExact(Errno.capture(), fd, level, option, v, len) < 0) {
                throw Errno.failure("getsockopt", what + " on fd " + fd);
            }
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * Marks what the socket sends with traffic class {@code tos} (the IPv4 TOS / IPv6 traffic
     * class byte): {@code IP_TOS} on an IPv4 socket; on an IPv6 one {@code IPV6_TCLASS} and also
     * {@code IP_TOS}, which is what its IPv4-mapped connections send with.
     */
    public static void setTrafficClass(int fd, int tos) {
        if (getIntOption(fd, SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN") == AF_INET6) {
            setIntOption(fd, IPPROTO_IPV6, IPV6_TCLASS, tos, "IPV6_TCLASS " + tos);
        }
        setIntOption(fd, IPPROTO_IP, IP_TOS, tos, "IP_TOS " + tos);
    }

    /**
     * The traffic class a connected socket sends with: {@code IPV6_TCLASS} for an IPv6 peer,
     * {@code IP_TOS} for an IPv4 one (on an IPv6 socket too, for an IPv4-mapped peer); -1 for a
     * socket that is not an IP one.
     */
    public static int trafficClass(int fd) {
        int domain = getIntOption(fd, SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN");
        if (domain == AF_INET6 && remoteAddress(fd).getAddress() instanceof java.net.Inet6Address) {
            return getIntOption(fd, IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS") & 0xff;
        }
        return domain == AF_INET || domain == AF_INET6 ? getIntOption(fd, IPPROTO_IP, IP_TOS, "IP_TOS") & 0xff : -1;
    }

    /** {@code SO_ERROR}: the pending error of a socket (0: none), e.g. how a non-blocking connect ended. */
    public static int pendingError(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_INT);
            MemorySegment len = a.allocate(JAVA_INT);
            len.set(JAVA_INT, 0, 4);
            if ((int) GETSOCKOPT.invokeExact(Errno.capture(), fd, SOL_SOCKET, SO_ERROR, v, len) < 0) {
                return Errno.last();
            }
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void bind(int fd, InetSocketAddress address) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = SockAddr.of(address, a);
            if ((int) BIND.invokeExact(Errno.capture(), fd, sa, (int) sa.byteSize()) < 0) {
                throw Errno.failure("bind", String.valueOf(address));
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void listen(int fd, int backlog) {
        try {
            if ((int) LISTEN.invokeExact(Errno.capture(), fd, backlog) < 0) {
                throw Errno.failure("listen", "fd " + fd);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** A non-blocking accepted socket, or -1 when none is pending (EAGAIN); other errors throw. */
    public static int accept(int fd) {
        try {
            int s = (int) ACCEPT4.invokeExact(Errno.capture(), fd, MemorySegment.NULL, MemorySegment.NULL,
                    SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (s < 0) {
                int errno = Errno.last();
                if (errno == Errno.EAGAIN || errno == Errno.EINTR || errno == Errno.ECONNABORTED) {
                    return -1;
                }
                throw Errno.failure("accept4", errno, "listening fd " + fd);
            }
            return s;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Starts a non-blocking connect: 0 when connected already, EINPROGRESS, or another errno. */
    public static int connect(int fd, InetSocketAddress address) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = SockAddr.of(address, a);
            if ((int) CONNECT.invokeExact(Errno.capture(), fd, sa, (int) sa.byteSize()) < 0) {
                return Errno.last();
            }
            return 0;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static InetSocketAddress localAddress(int fd) {
        return name(GETSOCKNAME, "getsockname", fd);
    }

    public static InetSocketAddress remoteAddress(int fd) {
        return name(GETPEERNAME, "getpeername", fd);
    }

    private static InetSocketAddress name(MethodHandle h, String call, int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = a.allocate(SockAddr.IN6);
            MemorySegment len = a.allocate(JAVA_INT);
            len.set(JAVA_INT, 0, (int) SockAddr.IN6.byteSize());
            if ((int) h.invokeExact(Errno.capture(), fd, sa, len) < 0) {
                throw Errno.failure(call, "fd " + fd);
            }
            return SockAddr.toInet(sa);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code recv(fd, address, length, MSG_DONTWAIT)}: bytes read, 0 at end of stream, or -errno. */
    public static long recv(int fd, long address, long length) {
        try {
            long n = (long) RECV.invokeExact(Errno.capture(), fd, address, length, MSG_DONTWAIT);
            return n >= 0 ? n : -Errno.last();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code recvfrom(fd, address, length, MSG_DONTWAIT | MSG_TRUNC, from, fromLen)}: the
     * datagram's whole length (more than {@code length} when it was cut: MSG_TRUNC), or -errno.
     * The sender's sockaddr goes to {@code from} ({@code fromLen}: an int holding its room).
     */
    public static long recvfrom(int fd, long address, long length, long from, long fromLen) {
        try {
            long n = (long) RECVFROM.invokeExact(Errno.capture(), fd, address, length, MSG_DONTWAIT | MSG_TRUNC, from, fromLen);
            return n >= 0 ? n : -Errno.last();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code sendto(fd, address, length, MSG_DONTWAIT, to, toLen)}: bytes sent, or -errno. */
    public static long sendto(int fd, long address, long length, long to, int toLen) {
        try {
            long n = (long) SENDTO.invokeExact(Errno.capture(), fd, address, length, MSG_DONTWAIT | MSG_NOSIGNAL, to, toLen);
            return n >= 0 ? n : -Errno.last();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code sendmsg(fd, msghdr, MSG_DONTWAIT | MSG_NOSIGNAL)} of a prepared {@link #MSGHDR_SIZE}
     * header whose iovec array and count were set with {@link #setIov}: bytes sent, or -errno.
     * MSG_NOSIGNAL: a peer that went away is an EPIPE here, not a SIGPIPE for the process.
     */
    public static long sendmsg(int fd, long msghdr) {
        try {
            long n = (long) SENDMSG.invokeExact(Errno.capture(), fd, msghdr, MSG_DONTWAIT | MSG_NOSIGNAL);
            return n >= 0 ? n : -Errno.last();
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Points a zeroed msghdr at {@code count} iovecs starting at {@code iov}. */
    public static void setIov(MemorySegment msghdr, long iov, long count) {
        msghdr.set(JAVA_LONG, MSG_IOV, iov);
        msghdr.set(JAVA_LONG, MSG_IOVLEN, count);
    }

    /** Sets iovec {@code index} of the array at {@code iovs}. */
    public static void iovec(MemorySegment iovs, int index, long base, long length) {
        iovs.set(JAVA_LONG, index * IOVEC_SIZE, base);
        iovs.set(JAVA_LONG, index * IOVEC_SIZE + 8, length);
    }

    /** Shuts a direction down; errors (the peer is gone already) are ignored. */
    public static void shutdown(int fd, int how) {
        try {
            int ignored = (int) SHUTDOWN.invokeExact(Errno.capture(), fd, how);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(Errno.capture(), fd);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static int epollCreate() {
        try {
            int fd = (int) EPOLL_CREATE1.invokeExact(Errno.capture(), EPOLL_CLOEXEC);
            if (fd < 0) {
                throw Errno.failure("epoll_create1", null);
            }
            return fd;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code epoll_ctl(epfd, op, fd, {events, data = fd})}; returns 0 or the errno. */
    public static int epollCtl(int epfd, int op, int fd, int events, MemorySegment eventBuf) {
        eventBuf.set(JAVA_INT, 0, events);
        eventBuf.set(EPOLL_DATA, EPOLL_DATA_OFFSET, fd);
        try {
            if ((int) EPOLL_CTL.invokeExact(Errno.capture(), epfd, op, fd, eventBuf) < 0) {
                return Errno.last();
            }
            return 0;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Ready events into {@code events} (room for {@code max}), waiting up to {@code timeoutMs}; EINTR is 0. */
    public static int epollWait(int epfd, MemorySegment events, int max, int timeoutMs) {
        try {
            int n = (int) EPOLL_WAIT.invokeExact(Errno.capture(), epfd, events, max, timeoutMs);
            if (n < 0) {
                if (Errno.last() == Errno.EINTR) {
                    return 0;
                }
                throw Errno.failure("epoll_wait", "epoll fd " + epfd);
            }
            return n;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The fd (data) of ready event {@code index}. */
    public static int epollEventFd(MemorySegment events, int index) {
        return (int) events.get(EPOLL_DATA, index * EPOLL_EVENT_SIZE + EPOLL_DATA_OFFSET);
    }

    /** The event bits of ready event {@code index}. */
    public static int epollEvents(MemorySegment events, int index) {
        return events.get(JAVA_INT, index * EPOLL_EVENT_SIZE);
    }
}
