package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.exceptions.WorkCompletionException;
import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.engine.io.SharedCompletions;
import dev.jrdma.spi.WorkCompletion;

/**
 * Turns a connection's completions into outcomes, on the completing thread: a receive goes to
 * the {@link ReceiveQueue}; a send-queue completion finishes its operation and, as RC completes
 * a send queue in order, every unsignaled one posted before it; an emulated atomic whose
 * compare-and-swap did not settle it posts its next attempt instead; a failed completion puts the
 * connection in error with the cause it names.
 *
 * <p>A finished operation's record is copied out and its slot freed before its caller is told,
 * so a callback can post again at once. The copy is in fields of this class, which belong to the
 * completing thread (callbacks run on it, but never re-enter a completion: {@code *Sync} calls
 * are refused there, and {@code IoThread.poll} does not nest).
 */
final class CompletionDispatch implements SharedCompletions.Member {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    private final ConnectionLife life;
    private final SendQueue sends;
    private final SendSlots slots;
    private final ReceiveQueue receives;
    private final ConnectionConfig config;
    private final ConnectionCounters counters;
    /** Completions handed to this connection so far (the completing thread's). */
    long count;

    // The operation being finished, copied out of its record.
    private byte doneKind;
    private Object doneCompletion;
    private Object doneAttachment;
    private long doneValue;
    private int doneIndex;
    private Operation doneOp;
    private long doneLength;
    private long donePostedAt;

    CompletionDispatch(ConnectionLife life, SendQueue sends, ReceiveQueue receives, ConnectionConfig config,
                       ConnectionCounters counters) {
        this.counters = counters;
        this.life = life;
        this.sends = sends;
        this.slots = sends.slots;
        this.receives = receives;
        this.config = config;
    }

    @Override
    public void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
        count++;
        if ((wrId & ReceiveQueue.RECV_FLAG) != 0) {
            receives.onCompletion((int) (wrId & 0xffff_ffffL), status, opcode, byteLen, imm, withImm);
            return;
        }
        int slot = (int) wrId;
        SendOperation o;
        while (true) {
            if (!slots.anyPosted()) {
                LOG.log(System.Logger.Level.ERROR, "completion for slot {0} of {1} with nothing outstanding", slot,
                        life.connection());
                return;
            }
            o = slots.popHead();
            if (o.slot == slot) {
                break;
            }
            // RC completes a send queue in order: unsignaled requests posted before this one are done.
            finishUnsignaled(o);
        }
        if (status == WorkCompletion.SUCCESS && o.op.shape == Operation.Shape.EMULATED) {
            finishAttempt(o);
            return;
        }
        // One tell on the common path, the rare ends in methods of their own: this method is
        // inlined into the completion queue's poll, and every copy of tell's switch it carries
        // makes that compiled loop bigger.
        takeDone(o);
        count(status);
        boolean ok = status == WorkCompletion.SUCCESS;
        SendOperation.tell(doneKind, doneCompletion, doneAttachment, ok ? doneValue : 0, doneIndex,
                ok ? null : failureOf(status));
    }

    /** {@code o}, unsignaled, ended successfully before the signaled request its queue just reported. */
    private void finishUnsignaled(SendOperation o) {
        takeDone(o);
        count(WorkCompletion.SUCCESS);
        SendOperation.tell(doneKind, doneCompletion, doneAttachment, doneValue, doneIndex, null);
    }

    /**
     * An attempt of the emulated atomic {@code o} succeeded: the word it saw settles the
     * operation, or its next compare-and-swap goes out on the same slot (and this is no end).
     */
    private void finishAttempt(SendOperation o) {
        long seen = sends.valueOf(o);
        RdmaException failure = null;
        if (!MaskedAtomics.settled(o, seen)) {
            failure = sends.postNextAttempt(o, seen);
            if (failure == null) {
                return;   // the next compare-and-swap is posted on the same slot
            }
        }
        takeDone(o);
        if (failure != null) {
            count(-1);
            SendOperation.tell(doneKind, doneCompletion, doneAttachment, 0, doneIndex, failure);
        } else {
            count(WorkCompletion.SUCCESS);
            SendOperation.tell(doneKind, doneCompletion, doneAttachment, doneValue, doneIndex, null);
        }
    }

    /** Handling one of this connection's completions from a shared queue threw: the connection fails, as when its own queue's poll throws. */
    @Override
    public void failed(Throwable t) {
        life.source.failed(t);
    }

    /**
     * Counts the operation in the done* fields as ended with {@code status} (-1: failed without a
     * completion status), and its latency when it was sampled. The teardown's marker is not an
     * operation and is not counted.
     */
    private void count(int status) {
        if (doneKind == SendOperation.MARKER) {
            return;
        }
        if (status != WorkCompletion.SUCCESS) {
            counters.failed(doneOp, status);
            return;
        }
        counters.completed(doneOp, doneLength);
        if (donePostedAt != 0) {
            long nanos = System.nanoTime() - donePostedAt;
            counters.latency(nanos);
            JrdmaEvents.operationLatency(life.remoteAddress(), doneOp.label, doneLength, nanos);
        }
    }

    /** The exception for the failed completion of {@link #doneOp}; a failure of its own puts the connection in error. */
    private RdmaException failureOf(int status) {
        RdmaException failure = life.failure();
        if (status == WorkCompletion.WR_FLUSH_ERR && failure != null) {
            return ConnectionLife.closedBecause(failure);
        }
        String what = doneOp.label + " on the connection to " + life.remoteAddress();
        String name = WorkCompletion.statusName(status);
        RdmaException e;
        if (status == WorkCompletion.RETRY_EXC_ERR || status == WorkCompletion.RNR_RETRY_EXC_ERR) {
            boolean rnr = status == WorkCompletion.RNR_RETRY_EXC_ERR;
            JrdmaEvents.retryExceeded(life.remoteAddress(), doneOp.label, rnr, rnr ? config.rnrRetry() : config.retryCount());
        }
        if (status == WorkCompletion.RETRY_EXC_ERR) {
            e = new ConnectionClosedException(what + " failed with " + name + ": the peer did not answer within "
                    + config.retryCount() + " retries, it is gone or unreachable");
        } else if (status == WorkCompletion.REM_ACCESS_ERR) {
            e = new RemoteAccessException(what, name);
        } else {
            e = new WorkCompletionException(what, name);
        }
        if (status == WorkCompletion.WR_FLUSH_ERR) {
            life.markFlushed(e);   // no failure known yet: the one behind the flush may still complete
        } else {
            life.markError(e);
        }
        return e;
    }

    /** Copies the finished operation {@code o} into the done* fields and frees its slot. On the completing thread. */
    private void takeDone(SendOperation o) {
        doneKind = o.kind;
        doneCompletion = o.completion;
        doneAttachment = o.attachment;
        doneOp = o.op;
        doneIndex = o.batchIndex;
        doneLength = o.length;
        donePostedAt = o.postedAt;
        doneValue = o.op.atomic ? sends.valueOf(o) : 0;
        RegionResources local = o.local;
        slots.release(o);
        if (local != null) {
            letGo(local);
        }
    }

    /** The operation that held {@code local}'s memory ended: a region closed meanwhile may be freed now. */
    private void letGo(RegionResources local) {
        try {
            local.releaseFromOperation();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "freeing " + local + ", closed while an operation of "
                    + life.connection() + " used it, failed", e);
        }
    }

    /**
     * The connection is released: every operation still holding a slot fails with {@code why}
     * (after the teardown's flush it should be none). On the IO thread; posters are shut out, as
     * the connection is CLOSED.
     */
    void failOutstanding(RdmaException why) {
        for (int slot = 0; slot <= slots.depth(); slot++) {   // the marker too (the last record)
            SendOperation o = slots.get(slot);
            synchronized (sends.postLock) {
                if (o == null || o.kind == SendOperation.FREE) {   // null: never taken
                    continue;
                }
                doneKind = o.kind;
                doneCompletion = o.completion;
                doneAttachment = o.attachment;
                doneIndex = o.batchIndex;
                if (o.kind != SendOperation.MARKER) {
                    counters.failed(o.op, -1);
                }
                RegionResources local = o.local;
                slots.release(o);
                if (local != null) {
                    letGo(local);
                }
            }
            SendOperation.tell(doneKind, doneCompletion, doneAttachment, 0, doneIndex, why);
        }
        slots.dropPosted();
    }
}
