package dev.jrdma;

/**
 * A completion handler for operations that end with an 8-byte value (the prior value of an
 * atomic), taking it as a primitive: unlike {@code CompletionHandler<Long, A>}, whose
 * {@code completed} boxes every value outside the small {@code Long} cache, nothing is allocated
 * per operation. Called on the connection's IO thread, exactly once per operation.
 *
 * @param <A> the attachment's type
 */
public interface LongCompletionHandler<A> {
    /**
     * The operation succeeded; {@code value} is the word's prior value.
     *
     * @param value the operation's result: the prior value of the word
     * @param attachment the attachment the operation was posted with
     */
    void completed(long value, A attachment);

    /**
     * The operation failed with {@code e} (an {@link dev.jrdma.exceptions.RdmaException}, or bad input).
     *
     * @param e what failed
     * @param attachment the attachment the operation was posted with
     */
    void failed(Throwable e, A attachment);
}
