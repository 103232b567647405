package dev.jrdma.provider.tcp;

/**
 * Where a tcp queue pair's incoming SEND (or WRITE_WITH_IMM) finds its receive: the queue pair's
 * own {@link TcpReceiveQueue}, or its share of a {@link TcpSharedReceiveQueue}. The responder
 * {@linkplain #claim claims} one when the message's header arrives, places the payload in it, and
 * {@linkplain #take takes} it when the message ends. On the queue pair's progress thread only.
 */
interface ReceiveSource {
    /**
     * A receive is held for the current message: true once one is (a queue of its own holds its
     * oldest; a shared queue hands one out, each to one queue pair). False while none is posted.
     */
    boolean claim();

    /** A receive is held (claimed and not taken or flushed). */
    boolean holds();

    /** The held receive's buffer: address, length and key. */
    long address();

    int length();

    int lkey();

    /** Ends the held receive; returns its work request id, for its completion. */
    long take();

    /**
     * The queue pair went to error: its own receives complete flushed; a receive claimed from a
     * shared queue goes back to it (the shared queue's others never belonged to this queue pair).
     */
    void flush(TcpCompletionQueue cq);
}
