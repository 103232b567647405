package dev.jrdma;

/**
 * A connection's queue pair: its number, its state as the device reports it, and what was
 * negotiated.
 *
 * @param rdAtomicOut RDMA reads/atomics we may have outstanding at the peer (initiator depth)
 * @param rdAtomicIn  ... the peer may have outstanding at us (responder resources)
 */
public record QueuePairInfo(int qpNumber, String state, int sendQueueDepth, int receiveQueueDepth, int maxInlineData,
                            int rdAtomicOut, int rdAtomicIn, int retryCount, int rnrRetry) {
}
