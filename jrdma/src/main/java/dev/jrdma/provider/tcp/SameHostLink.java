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
 *    HELLO (rendezvous, nonce) ------------------>   {@link #offer}: connect, prove, send the nonce
 *    {@link #join}: find it by nonce, send our ring <-------- ACCEPT (offered)
 *    READY_TO_USE (rings) ----------------------->   {@link #acceptPeerRing}: map the client's ring,
 *    {@link #pollPeerRing}: map the server's ring                      send ours
 * </pre>
 *
 * No descriptor goes to a rendezvous before its owner showed, by answering with its own ring
 * for the nonce, that it is the client of this handshake: anyone may name any rendezvous in a
 * HELLO, and a server must not push memory (or descriptors in flight, which the kernel counts
 * against our user) into a process that never asked for it.
 */
public interface SameHostLink extends AutoCloseable {
    /**
     * Server: proves itself at the client's rendezvous and sends the client's nonce and
     * {@code binding} (no descriptor); false: no link. {@code binding}: this TCP connection as
     * both ends see it ({@link TcpHandshake#binding}).
     */
    boolean offer(byte[] rendezvous, byte[] nonce, long binding);

    /**
     * Client: takes the channel a server opened with our nonce, checks that it was opened for
     * this TCP connection ({@code binding}: a server that relays our HELLO to another of our
     * user's is on another connection), and sends our ring; false: no link (logged).
     */
    boolean join(byte[] nonce, long binding);

    /**
     * Server: READY_TO_USE said rings, so the client's ring must be waiting on the channel: maps
     * it and sends ours; false when it is not there or refused.
     */
    boolean acceptPeerRing();

    /**
     * Client, once the connection runs: the server's ring, which it sends after our READY_TO_USE.
     * 1: mapped now (or before), 0: not there yet, -1: what came is refused (the connection ends).
     * Non-blocking.
     */
    int pollPeerRing();

    /** Why {@link #pollPeerRing} last said -1, for the message that ends the connection. */
    default String whyNoPeerRing() {
        return "no reason recorded";
    }

    /** Whether the link is in place: the channel proven, our ring made (the client maps the server's later). */
    boolean ready();

    /** The proven channel (for the descriptors of regions the peer maps); valid once {@link #ready}. */
    SameHostChannel channel();

    /** The ring this side writes. */
    FrameRing txRing();

    /** The peer's ring, which this side reads; null until it is mapped. */
    FrameRing rxRing();

    /** Frees both rings and closes the channel (the peer sees it end). */
    @Override
    void close();
}
