package dev.jrdma;

import java.time.Duration;

/**
 * A connection's queue pair: its number, its state as the device reports it, and what was
 * negotiated.
 *
 * @param qpNumber the queue pair's number (verbs: the device's QP number; tcp and shm: jrdma's own)
 * @param state the state the device reports (for example {@code RTS} or {@code ERROR})
 * @param sendQueueDepth work requests the send queue holds
 * @param receiveQueueDepth receives the receive queue holds
 * @param maxInlineData bytes a work request may carry inline
 * @param rdAtomicOut RDMA reads/atomics we may have outstanding at the peer (initiator depth)
 * @param rdAtomicIn  ... the peer may have outstanding at us (responder resources)
 * @param retryCount  transport retries this QP applies to its requests, as the device reports
 *                    them (verbs; rdma_cm may have set another value than this side asked, see
 *                    {@link ConnectionConfig#retryCount()}), or as configured (tcp, shm)
 * @param rnrRetry    receiver-not-ready retries this QP applies to its sends, likewise (see
 *                    {@link ConnectionConfig#rnrRetry()})
 * @param ackTimeout  the local ack timeout exponent as the device reports it: a request not
 *                    acknowledged within 4.096 µs × 2<sup>n</sup> is sent again (0: never). -1
 *                    where the transport has no such setting (tcp, shm) or the QP is gone.
 * @param minRnrTimer the RNR delay this side asks senders to wait, IB encoding (12: 0.64 ms, 0:
 *                    655.36 ms) as the device reports it; -1 as for ackTimeout.
 * @param trafficClass the traffic class (IPv4 TOS / IPv6 traffic class byte: DSCP &lt;&lt; 2 | ECN)
 *                    the queue pair's packets carry: on verbs the address vector's as the device
 *                    reports it (the client's {@link ConnectionConfig#trafficClass()} on both
 *                    sides), on tcp and shm what this side's socket sends with; -1 when the QP is
 *                    gone.
 * @param serviceLevel the service level of the address vector as the device reports it: the
 *                    client's {@link ConnectionConfig#serviceLevel()} on both sides, or rdma_cm's
 *                    (on RoCE derived from the traffic class); rxe keeps none and reports 0. -1 on
 *                    tcp and shm, or when the QP is gone.
 * @param flowLabel   the GRH flow label (20 bits) of the address vector as the device reports it:
 *                    the client's {@link ConnectionConfig#flowLabel()} on both sides, or rdma_cm's;
 *                    -1 as for serviceLevel.
 */
public record QueuePairInfo(int qpNumber, String state, int sendQueueDepth, int receiveQueueDepth, int maxInlineData,
                            int rdAtomicOut, int rdAtomicIn, int retryCount, int rnrRetry, int ackTimeout,
                            int minRnrTimer, int trafficClass, int serviceLevel, int flowLabel) {

    /**
     * {@link #ackTimeout()} as a duration; null when there is none (-1) or it is infinite (0).
     *
     * @return the ack timeout as a duration, or null
     */
    public Duration ackTimeoutDuration() {
        return ackTimeout <= 0 ? null : Duration.ofNanos(4096L << ackTimeout);
    }
}
