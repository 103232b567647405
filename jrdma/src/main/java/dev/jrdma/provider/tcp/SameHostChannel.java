package dev.jrdma.provider.tcp;

/**
 * A link to one peer proven to run on this host as our own user (shm): a Unix socket whose other
 * end the kernel vouched for ({@code SO_PEERCRED}), carrying fixed records that may hand over a
 * file descriptor. It is how a ring or a region's memory reaches the peer: the descriptor itself,
 * never a path or a pid to open. Records are sent before the frame that announces them, so the
 * receiver finds the record waiting when the frame arrives (a Unix socket queues at the send).
 *
 * <p>Records: {@link #RING_OFFER} (server to client, at the handshake: the nonce of the client's
 * HELLO, and the TCP connection it is for, {@link TcpHandshake#binding}; no descriptor goes to
 * a rendezvous before its owner claimed the nonce), {@link #RING} (each side's stream ring: offset and size in the fd; the client's first,
 * the server's after it took the client's) and {@link #MAP} (an answer to MAP_REQUEST: key,
 * offset and length in the fd).
 */
public interface SameHostChannel extends AutoCloseable {
    long RING_OFFER = 1, RING = 2, MAP = 3;

    /** One record: its kind, four values, and the descriptor it carried (-1: none), now the receiver's to close. */
    record Record(long kind, long a, long b, long c, long d, int fd) {
    }

    /** The peer's pid as the kernel reported it, for messages. */
    long peerPid();

    /** Sends a record with {@code fd} attached (-1: none), without waiting; false when it could not go. */
    boolean send(long kind, long a, long b, long c, long d, int fd);

    /** The next record, or null when none is waiting or what waits is not a record (its descriptor closed). */
    Record receive();

    /**
     * Whether a {@link #receive} found the channel ended (the peer closed it, or it failed) or
     * a packet that is not a record: nothing that was to come will.
     */
    boolean broken();

    @Override
    void close();
}
