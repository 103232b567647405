package dev.jrdma.spi;

/** What {@link ConnectionManager#processEvents} reports, on the thread that called it. */
public interface CmEventHandler {
    /** A peer asks to connect; accept or reject {@code request} (now or later). */
    void onConnectRequest(CmListener listener, CmEndpoint request, byte[] privateData);

    /** A connection is up; {@code privateData} is what the peer sent with its accept (empty for the passive side). */
    void onEstablished(CmEndpoint endpoint, byte[] privateData);

    /** The peer refused our request ({@code privateData}: its reason, possibly empty). */
    void onRejected(CmEndpoint endpoint, int status, byte[] privateData);

    /** Establishing failed: address, route, unreachable, time-out; {@code what} says which. */
    void onError(CmEndpoint endpoint, String what, int status);

    /** The connection went down (either side disconnected, or the device failed). */
    void onDisconnected(CmEndpoint endpoint);

    /**
     * The peer of {@code endpoint} misused its connection: it named a key it was not granted, or
     * broke the protocol ({@code what} says which). The provider ends that connection itself; the
     * handler may hold it against the peer's address (see the accept policy).
     */
    default void onPeerOffence(CmEndpoint endpoint, String what) {
    }

    /**
     * The private data of a rejection that says {@code reason} to the peer, for a request the
     * provider refuses itself (its connection limits) before {@link #onConnectRequest}; null: none.
     */
    default byte[] rejection(String reason) {
        return null;
    }
}
