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
    /**
     * The queue pair whose socket each watched fd is, by fd: what a readiness event wakes.
     * Copied on write (under this), read by the IO thread without a lock.
     */
    private volatile TcpQueuePair[] byFd = new TcpQueuePair[64];
    /** Completion queues of this channel at rest ({@link TcpCompletionQueue#rest}): while none is, no pass looks at readiness. */
    final java.util.concurrent.atomic.AtomicInteger resting = new java.util.concurrent.atomic.AtomicInteger();

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

    /** Whether a thread may arm and sleep on this channel (and so whether its queues may rest). */
    boolean sleepers() {
        return sleepers;
    }

    @Override
    public boolean readinessDriven() {
        return sleepers;
    }

    /**
     * How often {@link #checkIdle} looks at the connections: a quarter of their shortest keep-alive
     * interval, in [20 ms, 5 s] (3.75 s by default), a sixteenth of them at a time. A look costs
     * most of a microsecond a connection (its objects are cold in the cache: 10 000 connections,
     * 0.75 % of a core at one look a second), so it is not made more often than the keep-alives need.
     */
    private volatile long idleCheckNanos = MAX_IDLE_CHECK_NANOS;
    private static final long MAX_IDLE_CHECK_NANOS = 5_000_000_000L;
    private long lastIdleCheck = System.nanoTime();   // the IO thread's

    /** {@link #checkIdle} looks at a sixteenth of the connections a time, so that no look is long. */
    private static final int IDLE_SLICES = 16;
    private int idleCursor;          // the IO thread's: where the next slice starts
    private long unlookedUntil;      // the IO thread's: silence before this is not counted (the thread was held up)

    @Override
    public int checkIdle() {
        long now = System.nanoTime();
        long period = idleCheckNanos / IDLE_SLICES;
        long since = now - lastIdleCheck;
        if (since < period) {
            return 0;
        }
        lastIdleCheck = now;
        if (since > 4 * period + 200_000_000L) {
            unlookedUntil = now + idleCheckNanos;   // late: for a whole round, silence so far is not known
        }
        boolean looked = now - unlookedUntil >= 0;
        TcpQueuePair[] a = byFd;
        // As many slices as are due since the last look (the timer may run less often than a slice's period).
        long slices = Math.min(IDLE_SLICES, Math.max(1, since / Math.max(1, period)));
        int from = idleCursor < a.length ? idleCursor : 0;
        int to = (int) Math.min(a.length, from + slices * ((a.length + IDLE_SLICES - 1) / IDLE_SLICES));
        for (int i = from; i < to; i++) {
            TcpQueuePair qp = a[i];
            if (qp != null) {
                try {
                    qp.checkIdle(now, looked);
                } catch (RuntimeException e) {
                    qp.failInternally(e);   // the exception barrier, as for its progress
                }
            }
        }
        idleCursor = to >= a.length ? 0 : to;
        return 0;
    }

    /** From now on readiness of {@code fd} wakes {@code qp}'s completion queue; any thread. */
    synchronized void register(int fd, TcpQueuePair qp) {
        long check = Math.max(20_000_000L, Math.min(MAX_IDLE_CHECK_NANOS, qp.keepAliveNanos() / 4));
        if (check < idleCheckNanos) {
            idleCheckNanos = check;
        }
        TcpQueuePair[] a = byFd;
        if (fd >= a.length) {
            a = java.util.Arrays.copyOf(a, Math.max(fd + 1, a.length * 2));
        } else {
            a = a.clone();
        }
        a[fd] = qp;
        byFd = a;
    }

    /** {@code fd} is no longer {@code qp}'s (its socket is closed, and the number may be another's next); any thread. */
    synchronized void unregister(int fd, TcpQueuePair qp) {
        TcpQueuePair[] a = byFd;
        if (fd < a.length && a[fd] == qp) {
            a = a.clone();
            a[fd] = null;
            byFd = a;
        }
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
        wakeReady(n);
        return n;
    }

    @Override
    public int pollReadiness() {
        if (resting.get() == 0) {
            return 0;   // every queue is polled anyway: no syscall
        }
        return wakeReady(Sockets.epollWait(epfd, events, MAX_EVENTS, 0));
    }

    /**
     * The {@code n} events just read: drains the wake-up eventfd, and wakes the resting queues
     * whose sockets are ready. Level-triggered, so a socket of a queue that is polled anyway is
     * reported again and again: ignored (its queue is not resting). Returns how many it woke.
     */
    private int wakeReady(int n) {
        TcpQueuePair[] a = byFd;
        int woke = 0;
        for (int i = 0; i < n; i++) {
            int fd = Sockets.epollEventFd(events, i);
            if (fd == wakeFd) {
                LibC.eventFdDrain(wakeFd, drainBuf);
            } else if (fd >= 0 && fd < a.length && a[fd] != null && a[fd].cq.activate()) {
                woke++;
            }
        }
        return woke;
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
