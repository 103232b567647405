package dev.jrdma;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A datagram endpoint's counts, behind its statistics getters ({@link DatagramEndpoint#sent()},
 * {@link DatagramEndpoint#received()}, {@link DatagramEndpoint#receiveErrors()}). Each is an
 * AtomicLong so that a getter on any thread reads it whole and current.
 *
 * <p>Threads: the thread that polls the endpoint's queue pair (its IO thread) counts sends
 * completed, datagrams received, receive errors and polls that threw; any thread reads.
 */
final class DatagramCounters {
    /** Datagrams sent: their sends completed successfully. */
    final AtomicLong sent = new AtomicLong();
    /** Datagrams received (handed to the handler, a waiting receive, or kept for the next). */
    final AtomicLong received = new AtomicLong();
    /** Receives that completed with an error (verbs: a datagram larger than a buffer), their buffers posted again. */
    final AtomicLong receiveErrors = new AtomicLong();
    /** Polls of the queue pair that threw (each logged): for tests, which expect none. */
    final AtomicLong pollFailures = new AtomicLong();
}
