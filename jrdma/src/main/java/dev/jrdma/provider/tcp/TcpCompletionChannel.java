package dev.jrdma.provider.tcp;

import dev.jrdma.os.Errno;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.LibC;
import dev.jrdma.spi.CompletionChannel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The event side of tcp completion queues: an epoll set of the sockets of their queue pairs,
 * level-triggered, plus an eventfd for completions made without socket activity (a QP moved
 * to error). Its fd is readable while any socket has bytes to read (or room to write when a
 * QP has bytes waiting), so an IO thread asleep on it wakes exactly when there is progress to make.
 */
final class TcpCompletionChannel implements CompletionChannel {
    private static final int MAX_EVENTS = 64;
    private final Arena arena = Arena.ofShared();
    private final int epfd;
    private final int wakeFd;
    private final MemorySegment events = arena.allocate(Sockets.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
    private final MemorySegment drainBuf = arena.allocate(8, 8);
    private final ThreadLocal<MemorySegment> ctlBuf = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(16, 8));
    private final ThreadLocal<MemorySegment> signalBuf = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8, 8));
    private volatile boolean closed;
    /** False once told that no thread ever sleeps on this channel ({@link #pollingOnly}). */
    private volatile boolean sleepers = true;

    TcpCompletionChannel() {
        epfd = Sockets.epollCreate();
        try {
            wakeFd = LibC.eventFd();
        } catch (RuntimeException e) {
            Sockets.close(epfd);
            throw e;
        }
        control(Sockets.EPOLL_CTL_ADD, wakeFd, Sockets.EPOLLIN);
    }

    @Override
    public void pollingOnly() {
        sleepers = false;
    }

    /** Whether a thread may arm and sleep on this channel. */
    boolean sleepers() {
        return sleepers;
    }

    @Override
    public int fd() {
        return epfd;
    }

    /** Adds, changes ({@code events}) or removes (events -1) a socket of a queue pair; any thread. */
    void watch(int fd, int events, boolean add) {
        if (closed) {
            return;
        }
        if (add) {
            control(Sockets.EPOLL_CTL_ADD, fd, events);
        } else {
            // A change for a socket no longer watched (its connection ended: gone() unwatched it,
            // possibly on another thread) is moot, not an error: a post must not throw for it.
            Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_MOD, fd, events, ctlBuf.get());
        }
    }

    void unwatch(int fd) {
        if (!closed) {
            Sockets.epollCtl(epfd, Sockets.EPOLL_CTL_DEL, fd, 0, ctlBuf.get());
        }
    }

    private void control(int op, int fd, int events) {
        int rc = Sockets.epollCtl(epfd, op, fd, events, ctlBuf.get());
        if (rc != 0) {
            throw Errno.failure("epoll_ctl", rc, "fd " + fd + " in epoll fd " + epfd);
        }
    }

    /** Wakes the IO thread asleep on this channel; any thread. */
    void wake() {
        if (!closed) {
            LibC.eventFdSignal(wakeFd, signalBuf.get());
        }
    }

    @Override
    public int drainEvents() {
        int n = Sockets.epollWait(epfd, events, MAX_EVENTS, 0);
        for (int i = 0; i < n; i++) {
            if (Sockets.epollEventFd(events, i) == wakeFd) {
                LibC.eventFdDrain(wakeFd, drainBuf);
            }
        }
        return n;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Sockets.close(wakeFd);
        Sockets.close(epfd);
        arena.close();
    }
}
