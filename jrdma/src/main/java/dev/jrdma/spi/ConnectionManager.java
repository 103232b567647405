package dev.jrdma.spi;

import dev.jrdma.exceptions.UnsupportedCapabilityException;
import java.net.InetSocketAddress;

/**
 * Connection establishment (rdma_cm for verbs). Asynchronous: calls start things, and
 * {@link #processEvents} reports how they went. One thread drives a manager (the IO thread
 * that owns it); {@link #fd()} becomes readable when there are events.
 */
public interface ConnectionManager extends AutoCloseable {
    int fd();

    /** Listens on {@code address} (port 0: any free one); requests come as {@link CmEventHandler#onConnectRequest}. */
    CmListener listen(InetSocketAddress address, int backlog);

    /**
     * Starts connecting to {@code remote}: resolves the address and route, creates the QP with
     * {@code cq} for both queues and {@code spec}, hands it to its {@code owner} (to post
     * receives), then sends a request carrying {@code privateData}. Ends in
     * {@link CmEventHandler#onEstablished}, {@code onRejected} or {@code onError}.
     */
    CmEndpoint connect(InetSocketAddress remote, CompletionQueue cq, QueuePairSpec spec, byte[] privateData,
                       int timeoutMs, QueuePairOwner owner);

    /** Handles every pending event, non-blocking; returns how many. */
    int processEvents(CmEventHandler handler);

    /** The most private data a connect request carries on this transport. */
    int maxConnectPrivateData();

    /**
     * Opens a datagram queue pair bound to {@code bind} (port 0: any free one), whose completions
     * wake the IO thread of {@code channel}. A provider without datagrams throws
     * {@link UnsupportedCapabilityException}.
     *
     * @param sendDepth    sends in flight at once
     * @param receiveDepth receives posted at once
     */
    default DatagramQueuePair openDatagram(InetSocketAddress bind, CompletionChannel channel, int sendDepth,
                                           int receiveDepth) {
        throw new UnsupportedCapabilityException("unreliable datagrams", "this provider", null);
    }

    @Override
    void close();
}
