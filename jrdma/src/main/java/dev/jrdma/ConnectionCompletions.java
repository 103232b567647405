package dev.jrdma;

import dev.jrdma.engine.io.SharedCompletions;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.Device;

/**
 * Where a connection's completions come from: a completion queue of its own (the software
 * providers, whose queues rest while idle), or room in one its IO thread's connections share
 * (verbs: {@link SharedCompletions}, one poll a pass for all of them). With a queue of its own
 * the connection's source polls it every pass; with a shared one the thread's
 * {@code SharedCompletions} does, finding the connection by its queue pair number, and the
 * connection's source is polled only during its teardown.
 *
 * <p>Threads: made on the control thread before the queue pair exists, then its connection's
 * IO thread's ({@link #poll}, {@link #arm}, {@link #drain}, {@link #release}).
 */
final class ConnectionCompletions {
    private final CompletionQueue cq;
    /** The thread's shared queues when {@link #cq} is one of them; null: {@link #cq} is the connection's own. */
    private final SharedCompletions shared;
    /** The entries of {@link #cq} the connection may fill: send queue, the teardown's marker, receive queue. */
    private final int depth;

    private ConnectionCompletions(CompletionQueue cq, SharedCompletions shared, int depth) {
        this.cq = cq;
        this.shared = shared;
        this.depth = depth;
    }

    /** Room for {@code depth} entries in {@code shared} (null: none shared on this thread), else a queue of its own. */
    static ConnectionCompletions make(Device device, CompletionChannel channel, SharedCompletions shared, int depth) {
        CompletionQueue joined = shared == null ? null : shared.join(depth);
        return joined != null ? new ConnectionCompletions(joined, shared, depth)
                : new ConnectionCompletions(device.createCompletionQueue(depth, channel), null, depth);
    }

    /** {@return the queue to make the connection's queue pair on} */
    CompletionQueue queue() {
        return cq;
    }

    /** {@return whether the queue is shared: then the thread's source polls it, not the connection's} */
    boolean shared() {
        return shared != null;
    }

    /** The queue pair {@code qpNum} is made: its completions go to {@code dispatch}. Before anything is posted on it. */
    void queuePairMade(int qpNum, CompletionDispatch dispatch) {
        if (shared != null) {
            shared.register(qpNum, dispatch);
        }
    }

    /**
     * Hands what there is to {@code dispatch} (a shared queue: to each of its connections; polled
     * here during the teardown, so a pass tells whether this connection had completions).
     */
    int poll(CompletionSink dispatch) {
        return shared != null ? shared.poll() : cq.poll(dispatch, 32);
    }

    /** The teardown began (on the IO thread): {@code source} is polled every pass until the connection is released. */
    void pollDuringTeardown(IoThread io, IoThread.Source source) {
        if (shared != null) {
            io.add(source);   // not polled before: the thread's source polls the shared queue
        } else {
            io.wake(source);   // polled again if it was resting
        }
    }

    void arm() {
        if (shared == null) {   // a shared queue is armed by the thread's source
            cq.arm();
        }
    }

    boolean rest(Runnable wake) {
        return shared == null && cq.rest(wake);
    }

    /** Takes what the queue holds now (not from inside a poll of it: the caller knows for its own queue). */
    void drain(CompletionSink dispatch) {
        if (shared != null) {
            shared.drain();
            return;
        }
        for (int i = 0; i < 64 && cq.poll(dispatch, 32) > 0; i++) {
            // again, until empty
        }
    }

    /** The connection is released and its queue pair {@code qpNum} (-1: none was made) destroyed: its own queue goes, or its room in the shared one. */
    void release(int qpNum) {
        if (shared != null) {
            shared.leave(cq, qpNum, depth);
        } else {
            cq.close();
        }
    }
}
