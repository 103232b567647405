package dev.jrdma.netty;

/**
 * Where a jrdma stream channel is in its life, and how far its input has ended. One value replaces
 * what were four booleans (open, active, input shut down, ChannelInputShutdownReadComplete told)
 * and the "connect pending" test, which could not all be true together in any order: the input
 * can only end while the channel is active, and closing ends everything.
 *
 * <pre>
 * OPEN --connect()--&gt; CONNECTING --the connect's promise taken (made, failed, cancelled)--&gt; OPEN
 * OPEN --the connection made--&gt; ACTIVE                     (an accepted channel starts ACTIVE)
 * ACTIVE --the peer's end read (half closure on), or shutdownInput()--&gt; INPUT_SHUTDOWN
 * INPUT_SHUTDOWN --the read round after the end--&gt; INPUT_SHUTDOWN_READ_COMPLETE
 * ACTIVE --a reset read (half closure on): both events at once--&gt; INPUT_SHUTDOWN_READ_COMPLETE
 * any --close--&gt; CLOSED
 * </pre>
 *
 * A channel whose connect promise was completed by someone else (not by the connection, a
 * timeout, a cancellation or a close) is OPEN again and may connect again, as before.
 *
 * <p>Written on the channel's event loop (and by an accepted channel's constructor, or the
 * server's loop closing an accepted channel never registered), read from any thread: the field
 * that holds it is volatile.
 */
enum ChannelState {
    /** Made, not connected, no connect pending. */
    OPEN,
    /** A connect was asked and its connection is not made yet; the connect promise is pending. */
    CONNECTING,
    /** Connected: the stream runs, both ways. */
    ACTIVE,
    /**
     * The input is shut: the peer's output ended and every byte before it was read (and
     * ChannelInputShutdownEvent told), or {@code shutdownInput()} discards what comes.
     */
    INPUT_SHUTDOWN,
    /** The input's end was told in full (ChannelInputShutdownReadComplete): no read round is left to do. */
    INPUT_SHUTDOWN_READ_COMPLETE,
    /** Closed: nothing more happens. */
    CLOSED;

    /** {@return whether the channel is not closed} */
    boolean isOpen() {
        return this != CLOSED;
    }

    /** {@return whether the channel is connected and not closed (its input may have ended)} */
    boolean isActive() {
        return this == ACTIVE || this == INPUT_SHUTDOWN || this == INPUT_SHUTDOWN_READ_COMPLETE;
    }

    /** {@return whether the input is shut (or was never there: not connected, or closed)} */
    boolean isInputShutdown() {
        return this != ACTIVE;
    }
}
