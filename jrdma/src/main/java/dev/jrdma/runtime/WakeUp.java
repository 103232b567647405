package dev.jrdma.runtime;

import dev.jrdma.os.LibC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * How an IO loop sleeps and is woken: poll(2) on an eventfd of its own and on the event fds of its
 * sources (completion channels, connection events), and a signal of that eventfd from whoever hands
 * it work. The sleep flag makes the signal cost a system call only while the loop sleeps: the loop
 * raises it, then looks at its queues once more; a producer queues, then reads it (both volatile,
 * so one of the two sees the other).
 *
 * <p>Threads: {@link #signal} and {@link #signalIfAsleep} from any thread; the rest by the loop's owner.
 */
final class WakeUp {
    private final int fd;
    private final int[] eventFds;
    private final Runnable onEventFdsReadable;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollfds;
    private final MemorySegment drainBuf;
    private final ThreadLocal<MemorySegment> signalBuf = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8));
    private volatile boolean asleep;
    /** Guarded by this: the fd is not signalled once closed (and its number perhaps reused). */
    private boolean closed;

    /**
     * @param eventFds           fds whose readability ends a sleep
     * @param onEventFdsReadable run after every sleep (e.g. acknowledge CQ events)
     */
    WakeUp(int[] eventFds, Runnable onEventFdsReadable) {
        this.eventFds = eventFds.clone();
        this.onEventFdsReadable = onEventFdsReadable;
        this.fd = LibC.eventFd();
        this.pollfds = arena.allocate(LibC.POLLFD, eventFds.length + 1);
        this.drainBuf = arena.allocate(8);
    }

    /** Whether the loop sleeps or is about to: for tests, and for the driven loop's wake-up. */
    boolean asleep() {
        return asleep;
    }

    /** Raised before the last look ahead of a sleep, lowered after it. */
    void asleep(boolean on) {
        asleep = on;
    }

    /** Ends a sleep now, or the next one at once. */
    synchronized void signal() {
        if (!closed) {
            LibC.eventFdSignal(fd, signalBuf.get());
        }
    }

    /** After queueing work: wakes the loop if it sleeps (a system call only then). */
    void signalIfAsleep() {
        if (asleep) {
            signal();
        }
    }

    /** Sleeps in poll(2) on the eventfd and the event fds, up to {@code timeoutMs}. */
    void sleep(int timeoutMs) {
        LibC.pollEntry(pollfds, 0, fd);
        for (int i = 0; i < eventFds.length; i++) {
            LibC.pollEntry(pollfds, i + 1, eventFds[i]);
        }
        LibC.poll(pollfds, eventFds.length + 1, timeoutMs);
    }

    /** After a sleep: takes the signals and lets the event fds' owner acknowledge theirs. */
    void woke() {
        LibC.eventFdDrain(fd, drainBuf);
        onEventFdsReadable.run();
    }

    /** Closes the eventfd (no signal reaches it after) and frees the poll set; once. */
    void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            LibC.close(fd);
        }
        arena.close();
    }
}
