package dev.jrdma;

import dev.jrdma.exceptions.RdmaException;

import java.nio.channels.CompletionHandler;
import java.util.concurrent.CompletableFuture;

/** Collects the completions of a submitted {@link Batch}'s members; completes once, when all are in. */
final class BatchCompletion {
    private final long[] values;
    private final CompletableFuture<long[]> future;
    private final Object attachment;
    private final CompletionHandler<long[], Object> handler;
    private int remaining;
    private RdmaException failure;

    @SuppressWarnings("unchecked")
    BatchCompletion(int size, CompletableFuture<long[]> future, Object attachment, CompletionHandler<long[], ?> handler) {
        this.values = new long[size];
        this.remaining = size;
        this.future = future;
        this.attachment = attachment;
        this.handler = (CompletionHandler<long[], Object>) handler;
    }

    /** Member {@code index} completed: with {@code e}, or with {@code value}. */
    void member(int index, RdmaException e, long value) {
        boolean last;
        synchronized (this) {
            if (e != null && failure == null) {
                failure = e;
            }
            values[index] = value;
            last = --remaining == 0;
        }
        if (last) {
            finish(failure);
        }
    }

    void finish(RdmaException e) {
        if (future != null) {
            if (e != null) {
                future.completeExceptionally(e);
            } else {
                future.complete(values);
            }
        } else if (e != null) {
            handler.failed(e, attachment);
        } else {
            handler.completed(values, attachment);
        }
    }
}
