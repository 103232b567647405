package dev.jrdma.spi;

/**
 * What a reliable-connected queue pair is created and connected with, and what it was granted;
 * plain values that a software provider's handshake carries to the peer. (Who owns the queue
 * pair, and what lock its posts are under, is the {@link QueuePairOwner}'s.)
 *
 * @param sendDepth          send queue work requests
 * @param recvDepth          receive queue work requests
 * @param maxSendSge         scatter/gather entries per send request
 * @param maxRecvSge         ... per receive
 * @param maxInlineData      bytes a send may carry inline
 * @param responderResources RDMA reads / atomics the peer may have outstanding at us
 * @param initiatorDepth     RDMA reads / atomics we may have outstanding at the peer
 * @param retryCount         transport retries (0-7)
 * @param rnrRetry           receiver-not-ready retries (0-6; 7, "forever", is refused above the SPI)
 * @param ackTimeout         the local ack timeout exponent (4.096 µs × 2<sup>n</sup>, 1-31), or -1
 *                           for the connection manager's own (rdma_cm derives it from the path's
 *                           packet life time). Software providers, whose transport has its own
 *                           timers, ignore it.
 * @param minRnrTimer        the receiver-not-ready delay this side asks a sender to wait, in the
 *                           IB encoding (1: 0.01 ms ... 12: 0.64 ms ... 31: 491.52 ms; 0: 655.36
 *                           ms), or -1 for the connection manager's (rdma_cm sets 0). Software
 *                           providers ignore it.
 * @param trafficClass       the traffic class (IPv4 TOS / IPv6 traffic class byte) of the
 *                           connection's packets, or -1 for the system's: verbs sets it through
 *                           rdma_cm on the connecting side; tcp and shm on each side's socket.
 * @param serviceLevel       the service level (0-15) of the connection's path, or -1 for the
 *                           connection manager's: verbs sets it, with the flow label, on a path it
 *                           gives rdma_cm on the connecting side; software providers ignore it.
 * @param flowLabel          the GRH flow label (20 bits), or -1 for the connection manager's; as
 *                           for serviceLevel.
 */
public record QueuePairSpec(int sendDepth, int recvDepth, int maxSendSge, int maxRecvSge, int maxInlineData,
                            int responderResources, int initiatorDepth, int retryCount, int rnrRetry, int ackTimeout,
                            int minRnrTimer, int trafficClass, int serviceLevel, int flowLabel) {

    /** A spec with the connection manager's ack timeout, RNR timer and path, and the system's traffic class. */
    public QueuePairSpec(int sendDepth, int recvDepth, int maxSendSge, int maxRecvSge, int maxInlineData,
                         int responderResources, int initiatorDepth, int retryCount, int rnrRetry) {
        this(sendDepth, recvDepth, maxSendSge, maxRecvSge, maxInlineData, responderResources, initiatorDepth, retryCount,
                rnrRetry, -1, -1, -1, -1, -1);
    }

    /** {@return whether the connecting side must give the connection manager its own path} */
    public boolean choosesPath() {
        return serviceLevel >= 0 || flowLabel >= 0;
    }
}
