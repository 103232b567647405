package dev.jrdma;

import java.nio.channels.CompletionHandler;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The forms in which {@link Connection}'s operations are posted (a future, a handler, a handler
 * only told of failures, an unboxed handler, a blocking call, done during the call), each over
 * {@link SendQueue#post}: one record per operation. {@code live} is the connection's current life
 * (after a reconnect, the new one). Called on the posting thread; holds no state.
 */
final class PostForms {
    private PostForms() {
    }

    /** Posts {@code op} (see {@link Operation} for {@code a..d}); a future tells the outcome. */
    static <T> CompletableFuture<T> future(Connection live, Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b,
                                            long c, long d) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            live.sends.post(op, buf, remote, imm, a, b, c, d, op.atomic ? SendOperation.LONG_FUTURE : SendOperation.VOID_FUTURE,
                    f, null);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    /** Posts {@code op}; {@code handler} is told the outcome, and nothing is allocated. */
    static <A> void handler(Connection live, Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b, long c, long d,
                             A attachment, CompletionHandler<?, ? super A> handler) {
        handler(live, op, buf, remote, imm, a, b, c, d, attachment, handler, Completion.ALWAYS);
    }

    /**
     * Posts {@code op}; {@code handler} is told the outcome, or with ON_ERROR only a failure (it may
     * then be null).
     */
    static <A> void handler(Connection live, Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b, long c, long d,
                             A attachment, CompletionHandler<?, ? super A> handler, Completion when) {
        boolean onError = Objects.requireNonNull(when, "when") == Completion.ON_ERROR;
        if (handler == null && !onError) {
            throw new NullPointerException(op.label + ": the handler (only an ON_ERROR operation may go without one)");
        }
        byte kind = onError ? SendOperation.ON_ERROR : op.atomic ? SendOperation.LONG_HANDLER : SendOperation.VOID_HANDLER;
        try {
            live.sends.post(op, buf, remote, imm, a, b, c, d, kind, handler, attachment);
        } catch (RuntimeException e) {
            if (handler == null) {
                throw e;   // bad input, and nobody else to tell
            }
            @SuppressWarnings("unchecked")
            CompletionHandler<Object, Object> h = (CompletionHandler<Object, Object>) handler;
            h.failed(e, attachment);
        }
    }

    /** Posts {@code op}, an atomic; {@code handler} gets its value unboxed, and nothing is allocated. */
    static <A> void primitive(Connection live, Operation op, RemoteRegion remote, long a, long b, long c, long d, A attachment,
                               LongCompletionHandler<? super A> handler) {
        if (handler == null) {
            throw new NullPointerException(op.label + ": the handler");   // the message built only then: this is the hot path
        }
        try {
            live.sends.post(op, null, remote, 0, a, b, c, d, SendOperation.PRIMITIVE_HANDLER, handler, attachment);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
        }
    }

    /** Posts {@code op} and waits for it in the caller; returns an atomic's prior value. */
    static long sync(Connection live, Operation op, LocalRegion buf, RemoteRegion remote, int imm, long a, long b, long c, long d) {
        SyncWaiter w = SyncWaiter.forThisThread(live.io);
        try {
            live.sends.post(op, buf, remote, imm, a, b, c, d, SendOperation.LONG_HANDLER, w, null);
        } catch (RuntimeException e) {
            w.reset();
            throw e;
        }
        return w.await(live);
    }

    /**
     * Posts {@code op}, a WRITE or READ: true when the provider did it during the call (nobody is
     * told), else {@code handler} is told the outcome once, later (bad input: during the call).
     */
    static <A> boolean doneOrHandler(Connection live, Operation op, LocalRegion buf, RemoteRegion remote, A attachment,
                                     CompletionHandler<Void, ? super A> handler) {
        if (handler == null) {
            throw new NullPointerException(op.label + ": the handler");
        }
        try {
            return live.sends.post(op, buf, remote, 0, 0, 0, 0, 0, SendOperation.HANDLER_UNLESS_DONE, handler, attachment);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
            return false;
        }
    }
}
