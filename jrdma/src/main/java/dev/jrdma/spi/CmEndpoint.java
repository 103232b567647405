package dev.jrdma.spi;

import java.net.InetSocketAddress;

/**
 * One side of a connection as the connection manager sees it: an incoming request to accept or
 * reject, or an outgoing connect; once established, its {@link #queuePair()}. Driven by the
 * thread that drives its manager.
 */
public interface CmEndpoint extends AutoCloseable {
    /** The QP, once created (null before). */
    QueuePair queuePair();

    InetSocketAddress remoteAddress();

    InetSocketAddress localAddress();

    /**
     * For an incoming request: creates the QP on {@code cq} with {@code spec}, hands it to its
     * {@code owner} (to post receives before the peer can send) and accepts.
     */
    void accept(CompletionQueue cq, QueuePairSpec spec, byte[] privateData, QueuePairOwner owner);

    /** For an incoming request: refuses it, telling the peer {@code privateData}. */
    void reject(byte[] privateData);

    /** Starts an orderly disconnect; both sides then see {@link CmEventHandler#onDisconnected}. */
    void disconnect();

    /** The API object this endpoint belongs to. */
    Object attachment();

    void attach(Object attachment);

    /** Destroys the QP and the endpoint. Idempotent. */
    @Override
    void close();
}
