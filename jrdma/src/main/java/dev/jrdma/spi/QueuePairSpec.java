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
 */
public record QueuePairSpec(int sendDepth, int recvDepth, int maxSendSge, int maxRecvSge, int maxInlineData,
                            int responderResources, int initiatorDepth, int retryCount, int rnrRetry) {
}
