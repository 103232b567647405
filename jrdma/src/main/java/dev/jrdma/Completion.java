package dev.jrdma;

/**
 * When an operation reports its outcome: librpma's {@code RPMA_F_COMPLETION_ALWAYS} and
 * {@code RPMA_F_COMPLETION_ON_ERROR}, for the handler forms of {@link Connection}'s operations.
 *
 * <p><b>ALWAYS</b> (what every other form does): the operation completes exactly once, with its
 * result or its failure.
 *
 * <p><b>ON_ERROR</b>: the operation reports nothing when it succeeds, and costs no completion: on
 * verbs it is an unsignaled work request (the connection signals one request in a run of them
 * now and then, unseen, so that the send queue is reclaimed), on shm a direct write that
 * succeeded leaves no record at all. When it fails, the failure is not lost:
 * <ul>
 * <li>its handler, when one was given, gets {@code failed} (once);</li>
 * <li>a failure of its own (wrong key, bounds, access, peer gone) puts the connection in
 *     {@link ConnectionState#ERROR} with that cause as {@link Connection#failure()}, as any
 *     failed operation does on RC;</li>
 *  <li>so every operation after it, the next ALWAYS one or a
 *     {@link Connection#flush flush} included, fails with a
 *     {@link dev.jrdma.exceptions.ConnectionClosedException} whose cause is that failure.</li>
 * </ul>
 *
 * <p><b>Ordering.</b> A connection's send queue completes in posting order (RC). So when an
 * ALWAYS operation or a flush posted after ON_ERROR ones completes successfully, every one of
 * them before it has succeeded, and (for a flush) its writes are visible at the peer. That is
 * also when their local buffers may be changed or closed: until then the device may still read
 * them (a message or write of at most {@link ConnectionConfig#maxInlineData()} bytes is copied
 * when posted). An ON_ERROR read or atomic's data or prior value is there, likewise, once a later
 * ALWAYS operation completed.
 *
 * <p>Emulated atomics ({@code maskedCompareAndSwap}, {@code maskedFetchAndAdd},
 * {@code atomicWrite}) and flushes need their completions, and are always ALWAYS.
 */
public enum Completion {
    /** Report success and failure, exactly once. */
    ALWAYS,
    /** Report only a failure; success is silent (no completion, no allocation, no callback). */
    ON_ERROR
}
