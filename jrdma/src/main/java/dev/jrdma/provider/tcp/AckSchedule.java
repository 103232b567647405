package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.ACK;

/**
 * When the responder acknowledges the peer's requests. ACKs are cumulative: the highest request
 * that asked for one and was applied is owed; it rides on the next frame going back (a SEND of
 * the application's ping-pong answer, a READ response), and when none went for a pass of
 * reading, it goes alone; before the IO thread sleeps it always goes. After a refusal nothing
 * more is acknowledged (the NAK carries what came before). Owed: progress thread; sent: under
 * the transmit lock, by whoever sends.
 */
final class AckSchedule {
    private final TcpQueuePair qp;
    private long wanted;              // the highest request of the peer's that asked for an ACK
    private volatile long ready;      // wanted, published for posting threads
    private volatile long sent;       // the highest ACK sent, piggybacked or not; written under the transmit lock
    private boolean held;             // an ACK waited one pass for a frame to ride on
    private boolean stopped;          // a request was refused: nothing more is acknowledged

    AckSchedule(TcpQueuePair qp) {
        this.qp = qp;
    }

    /** Request {@code seq} was applied and asked for its ACK. */
    void owe(long seq) {
        wanted = seq;
        ready = seq;
    }

    /** The ACK to put on a frame going back now (0: none owed); under the transmit lock. */
    long piggyback() {
        long a = ready;
        if (a > sent && !stopped) {
            sent = a;
            return a;
        }
        return 0;
    }

    /** After a pass of reading: an ACK still owed waits one pass for a frame to ride on, then goes alone. */
    void afterPass() {
        if (wanted > sent && !stopped) {
            if (!held) {
                held = true;
                return;
            }
            flush();
        } else {
            held = false;
        }
    }

    /**
     * A keep-alive: an ACK of what was acknowledged already (a peer's requester takes a repeated
     * ACK as nothing new), for a connection that has sent nothing for a while. Under the transmit lock.
     */
    void keepAlive() {
        if (!stopped) {
            qp.frameHeader(ACK, 0, 0, 0, sent, 0, 0, 0, 0, 0);
            qp.finishTransmit();
        }
    }

    /** Whether an ACK is owed and not sent yet. */
    boolean owed() {
        return wanted > sent && !stopped;
    }

    /** Sends an ACK owed now, if any (before the IO thread sleeps: nothing may wait for a next pass). */
    void flush() {
        held = false;
        if (stopped) {
            return;
        }
        synchronized (qp.txLock) {
            long a = ready;
            if (a > sent && !qp.state.closed() && qp.state.started()) {
                sent = a;
                qp.frameHeader(ACK, 0, 0, 0, a, 0, 0, 0, 0, 0);
                qp.finishTransmit();
            }
        }
    }

    /**
     * Request {@code refused} is about to be NAKed: what was applied before it is acknowledged
     * first (the NAK answers only it), and nothing is acknowledged from now on. Under the transmit lock.
     */
    void beforeNak(long refused) {
        stopped = true;
        long a = ready;
        if (a > sent && a < refused) {
            sent = a;
            qp.frameHeader(ACK, 0, 0, 0, a, 0, 0, 0, 0, 0);
        }
    }
}
