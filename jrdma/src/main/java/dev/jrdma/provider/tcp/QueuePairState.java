package dev.jrdma.provider.tcp;

import dev.jrdma.spi.QueuePair;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A tcp queue pair's state: two small machines, each only ever moving forward, so that every
 * thread can read where a queue pair is without a lock, and no late step (a start after a close,
 * a peer-gone after an internal failure) can take it back.
 *
 * <pre>
 *  QP, as its owner sees it ({@link QueuePair#queryState}):
 *    INIT --start--> RTS --moveToError--> ERROR_REQUESTED --progress flushes--> ERROR --close--> CLOSED
 *    (any state may skip ahead: a connection that fails in its handshake goes INIT -> ERROR_REQUESTED,
 *     and close from anywhere is CLOSED)
 *
 *  Transport, the socket as the progress thread meets it:
 *    HANDSHAKE --start--> OPEN --EOF, reset, DISCONNECT, protocol error, silent peer--> GONE
 *    (any) --a throwable in this queue pair's progress--> FAILED   (nothing of it runs again)
 * </pre>
 *
 * Who moves what: the connection manager starts (its thread); the owner asks for the error
 * state and closes (any thread); the progress thread flushes into ERROR and ends the transport.
 * Reads are volatile loads, cheap enough for the hot paths that test them once per frame.
 */
final class QueuePairState {
    enum Qp { INIT, RTS, ERROR_REQUESTED, ERROR, CLOSED }

    enum Transport { HANDSHAKE, OPEN, GONE, FAILED }

    private static final VarHandle QP, TRANSPORT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            QP = l.findVarHandle(QueuePairState.class, "qp", Qp.class);
            TRANSPORT = l.findVarHandle(QueuePairState.class, "transport", Transport.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile Qp qp = Qp.INIT;
    private volatile Transport transport = Transport.HANDSHAKE;

    Qp qp() {
        return qp;
    }

    Transport transport() {
        return transport;
    }

    /** The handshake is over: the socket is the queue pair's (it may have ended since). */
    boolean started() {
        return transport != Transport.HANDSHAKE;
    }

    /** The owner asked for the error state (or closed): nothing new is started. */
    boolean errorRequested() {
        return qp.compareTo(Qp.ERROR_REQUESTED) >= 0;
    }

    /** Everything outstanding was flushed (or the queue pair is closed): requests complete in error. */
    boolean inError() {
        return qp.compareTo(Qp.ERROR) >= 0;
    }

    boolean closed() {
        return qp == Qp.CLOSED;
    }

    /** The peer is gone, or this queue pair failed: its stream is not read any more. */
    boolean peerGone() {
        return transport.compareTo(Transport.GONE) >= 0;
    }

    /** A throwable ended this queue pair's progress. */
    boolean failed() {
        return transport == Transport.FAILED;
    }

    /** The {@code enum ibv_qp_state} value for {@link QueuePair#queryState}. */
    int verbsState() {
        return switch (qp) {
            case INIT -> QueuePair.STATE_INIT;
            case RTS -> QueuePair.STATE_RTS;
            case ERROR_REQUESTED, ERROR, CLOSED -> QueuePair.STATE_ERR;
        };
    }

    /** Connection manager: the handshake is done. INIT to RTS unless the owner moved on already. */
    void start() {
        advanceTransport(Transport.OPEN);
        advanceQp(Qp.RTS);
    }

    /** Owner, any thread: the QP is to go to ERROR; true when this call asked first. */
    boolean requestError() {
        return advanceQp(Qp.ERROR_REQUESTED);
    }

    /** Progress thread: true when this call moved the QP into ERROR (it flushes then). */
    boolean enterError() {
        return advanceQp(Qp.ERROR);
    }

    /** Owner: true when this call closed it. */
    boolean close() {
        return advanceQp(Qp.CLOSED);
    }

    /** Progress thread: true when this call ended the transport (the peer-gone report is its to make). */
    boolean gone() {
        return advanceTransport(Transport.GONE);
    }

    /** Progress thread: the transport fails; returns what it was (FAILED: it had failed already). */
    Transport fail() {
        while (true) {
            Transport was = transport;
            if (was == Transport.FAILED || TRANSPORT.compareAndSet(this, was, Transport.FAILED)) {
                return was;
            }
        }
    }

    private boolean advanceQp(Qp to) {
        return advance(QP, to);
    }

    private boolean advanceTransport(Transport to) {
        return advance(TRANSPORT, to);
    }

    /** Moves {@code field} forward to {@code to}; false when it is there or past it already. */
    @SuppressWarnings("unchecked")
    private <E extends Enum<E>> boolean advance(VarHandle field, E to) {
        while (true) {
            E was = (E) field.getVolatile(this);
            if (was.compareTo(to) >= 0) {
                return false;
            }
            if (field.compareAndSet(this, was, to)) {
                return true;
            }
        }
    }

    @Override
    public String toString() {
        return qp + "/" + transport;
    }
}
