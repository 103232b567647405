package dev.jrdma.perf;

/**
 * What a {@code jrdma perf} client ran on, for the report's header: the provider and device, the
 * operations it kept in flight in bandwidth tests, and its QP's ack timeout.
 *
 * @param window     operations in flight in bandwidth tests: -t, and for send_bw at most the
 *                   receives the server keeps posted
 * @param ackTimeout the client QP's ack timeout exponent as the device reports it; -1 where the
 *                   transport has none (tcp, shm)
 */
record RunFacts(String provider, String device, int window, int ackTimeout) {
}
