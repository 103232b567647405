package dev.jrdma.spi;

/**
 * What a reliable-connected queue pair is created and connected with.
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
 * @param postLock           the monitor the owner holds around every postSend, postStaged and
 *                           postRecv (the Connection's), or null. A provider whose QP guards its
 *                           send state against its own progress thread may take this one rather
 *                           than a lock of its own, so that a post costs one lock, not two. Not
 *                           part of what is negotiated: specs that cross the wire carry null.
 */
public record QueuePairSpec(int sendDepth, int recvDepth, int maxSendSge, int maxRecvSge, int maxInlineData,
                            int responderResources, int initiatorDepth, int retryCount, int rnrRetry, Object postLock) {

    /** A spec without an owner's lock. */
    public QueuePairSpec(int sendDepth, int recvDepth, int maxSendSge, int maxRecvSge, int maxInlineData,
                         int responderResources, int initiatorDepth, int retryCount, int rnrRetry) {
        this(sendDepth, recvDepth, maxSendSge, maxRecvSge, maxInlineData, responderResources, initiatorDepth, retryCount,
                rnrRetry, null);
    }
}
