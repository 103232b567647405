package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;

import java.nio.channels.CompletionHandler;
import java.util.concurrent.CompletableFuture;

/**
 * One operation in the send queue: the record of what was posted and whom to tell. There is one
 * per send-queue slot, made with the connection and reused (no allocation per operation); its
 * {@link #slot} is the work request id. It belongs to the poster from {@link SendSlots#take}
 * until it is pushed onto the posted ring, then to the completing thread until
 * {@link SendSlots#free}.
 */
final class SendOperation {
    /** How the caller learns the outcome: the kind of {@link #completion}. 0: the slot is free. */
    static final byte FREE = 0, VOID_FUTURE = 1, LONG_FUTURE = 2, VOID_HANDLER = 3, LONG_HANDLER = 4, BATCH_MEMBER = 5;
    /** {@link Completion#ON_ERROR}: a handler (or null) told only of a failure. */
    static final byte ON_ERROR = 6;
    /** The teardown's marker (see {@link SendQueue#postMarker}): nobody is told. */
    static final byte MARKER = 7;
    /** A {@link LongCompletionHandler}: the value unboxed. */
    static final byte PRIMITIVE_HANDLER = 8;
    /**
     * Asked of {@link SendQueue#post} only, never held by a record: a WRITE or READ that is done
     * during the call where the provider can (nobody told), else a {@link #VOID_HANDLER}.
     */
    static final byte HANDLER_UNLESS_DONE = 9;

    /** The work request id: this record's index. */
    final int slot;
    Operation op;
    byte kind;
    /** A CompletableFuture, a CompletionHandler (a SyncWaiter for *Sync; null for ON_ERROR without one), or a BatchCompletion. */
    Object completion;
    Object attachment;
    /** A batch member's place in its batch. */
    int batchIndex;
    /** The region whose memory is its local buffer, held (see RegionResources.acquireForOperation) until it ends; or null. */
    RegionResources local;
    /** The bytes it moves, for the statistics: the local buffer's length, 8 for an atomic. */
    long length;
    /** When it was posted (System.nanoTime), if its latency is sampled; else 0. */
    long postedAt;

    // An emulated atomic: its arguments (see MaskedAtomics), what its last compare-and-swap
    // expected, the remote word, and when it gives up.
    long a, b, c, d;
    long expected;
    long deadline;
    RemoteRegion remote;

    SendOperation(int slot) {
        this.slot = slot;
    }

    void clear() {
        completion = null;
        attachment = null;
        remote = null;
        local = null;
        postedAt = 0;
        op = null;
        kind = FREE;
    }

    /** Tells the caller: {@code e} null for success with {@code value} (the prior value of an atomic). */
    @SuppressWarnings("unchecked")
    static void tell(byte kind, Object completion, Object attachment, long value, int batchIndex, RdmaException e) {
        switch (kind) {
            case VOID_FUTURE, LONG_FUTURE -> {
                CompletableFuture<Object> f = (CompletableFuture<Object>) completion;
                if (e != null) {
                    f.completeExceptionally(e);
                } else {
                    f.complete(kind == LONG_FUTURE ? (Object) value : null);
                }
            }
            case VOID_HANDLER, LONG_HANDLER -> {
                if (completion instanceof SyncWaiter w) {
                    w.done(value, e);
                } else if (e != null) {
                    ((CompletionHandler<Object, Object>) completion).failed(e, attachment);
                } else {
                    ((CompletionHandler<Object, Object>) completion).completed(kind == LONG_HANDLER ? (Object) value : null,
                            attachment);
                }
            }
            case BATCH_MEMBER -> ((BatchCompletion) completion).member(batchIndex, e, value);
            case PRIMITIVE_HANDLER -> {
                LongCompletionHandler<Object> h = (LongCompletionHandler<Object>) completion;
                if (e != null) {
                    h.failed(e, attachment);
                } else {
                    h.completed(value, attachment);
                }
            }
            case ON_ERROR -> {
                if (e != null && completion != null) {
                    ((CompletionHandler<Object, Object>) completion).failed(e, attachment);
                }
            }
            case MARKER -> {
            }
            default -> throw new IllegalStateException("completion for a free slot");
        }
    }
}
