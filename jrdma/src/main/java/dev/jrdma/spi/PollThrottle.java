package dev.jrdma.spi;

/**
 * Spaces out a look that costs a syscall (a connection manager's event channel) on an IO
 * thread that polls in a loop: at most one look per {@code intervalNanos}, the clock read only
 * every 64th call, and every call while there is activity (the last look found something, or
 * the owner says it is waiting for events). Connection set-up is not latency-critical; the
 * data path is, and a spinning pass of verbs costs a few hundred nanoseconds, of which a
 * read(2) that finds nothing would be most (in the Soft-RoCE VM's emulated CPU, all).
 * On the thread that polls only.
 */
public final class PollThrottle {
    private final long intervalNanos;
    private long lastLook;
    private int calls;
    private boolean active = true;

    public PollThrottle(long intervalNanos) {
        this.intervalNanos = intervalNanos;
    }

    /** Whether to look now. */
    public boolean due() {
        if (active) {
            return true;
        }
        return (++calls & 63) == 0 && clockSaysDue();   // kept small, so that the JIT inlines it into every pass
    }

    private boolean clockSaysDue() {
        long now = System.nanoTime();
        if (now - lastLook < intervalNanos) {
            return false;
        }
        lastLook = now;
        return true;
    }

    /** After a look: {@code busy} keeps the following calls looking (events found, or some awaited). */
    public void looked(boolean busy) {
        active = busy;
    }
}
