package dev.jrdma.provider.tcp;

/**
 * One connection's link to a peer of this host, as the shm provider builds it during the tcp
 * handshake: the peer proves it runs on this host as our user, the two exchange their
 * {@link FrameRing}s as descriptors on a {@link SameHostChannel}, and from then on the connection's
 * frames go through the rings and its one-sided operations on shareable regions are done
 * directly. Each step is non-blocking: the peer sends before the handshake message that
 * announces it, so what a step reads is already there, or never comes (then the connection
 * keeps the socket, or ends when the peer claimed what it did not send). Manager thread.
 *
 * <pre>
 *  client                                          server
 *    HELLO (rendezvous, nonce) ------------------>   {@link #offer}: connect, prove, send our ring
 *    {@link #join}: find it by nonce, map, send ours <--------- ACCEPT (offered)
 *    READY_TO_USE (rings) ----------------------->   {@link #takePeerRing}: map the client's ring
 * </pre>
 */
public interface SameHostLink extends AutoCloseable {
    /** Server: proves itself at the client's rendezvous and sends our ring with the client's nonce; false: no link. */
    boolean offer(byte[] rendezvous, byte[] nonce);

    /** Client: takes the channel a server opened with our nonce, maps its ring and sends ours; false: no link (logged). */
    boolean join(byte[] nonce);

    /** Server: READY_TO_USE said rings, so the client's ring must be waiting on the channel; false: it is not. */
    boolean takePeerRing();

    /** Whether the link is complete: both rings in place and the channel proven. */
    boolean ready();

    /** The proven channel (for the descriptors of regions the peer maps); valid once {@link #ready}. */
    SameHostChannel channel();

    /** The ring this side writes. */
    FrameRing txRing();

    /** The peer's ring, which this side reads. */
    FrameRing rxRing();

    /** Frees both rings and closes the channel (the peer sees it end). */
    @Override
    void close();
}
