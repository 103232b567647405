package dev.jrdma.provider.tcp;

import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * What the tcp provider needs to let two peers of one host reach each other's memory directly
 * (the {@code shm} provider implements it): shareable memory, where its descriptor is, proving
 * that a peer shares this host and user ({@link SameHostChannel}), and mapping what a proven peer
 * handed over. With it, a connection whose peer proved itself sends its frames through shared
 * rings and one-sided operations on shareable regions as plain loads, stores and CPU atomics on
 * the mapping, with no CPU of the target; everything else keeps the tcp path.
 *
 * <p>The handshake ({@link SameHostLink}): the client's HELLO names its rendezvous socket and a
 * nonce; a server of this host connects there (the kernel tells it the listener's uid), sends the
 * nonce, and says so in ACCEPT; the client finds that channel by the nonce (the kernel tells it
 * the connector's uid) and sends its ring; the server maps it and sends its own. A peer on another host
 * can name any socket and nonce it likes: it reaches only a process of our own uid, which is
 * trusted, and gets no channel of its own.
 */
public interface TcpSameHost {
    /** Zeroed shareable memory of {@code size} bytes, or null when it cannot be made. */
    ShareableMemory allocate(long size);

    /**
     * The descriptor a peer of this host maps {@code memory} through: {fd, offset of memory in
     * that fd}, or null when it is not shareable (the user's own memory): that region keeps the
     * tcp path.
     */
    long[] locate(MemorySegment memory);

    /**
     * Maps {@code length} bytes at {@code offset} of {@code fd}, a descriptor a proven peer handed
     * over, after checking that it is memory that cannot change size and holds the range; the
     * descriptor is closed in every case. Null when it is refused.
     */
    MemorySegment map(int fd, long offset, long length, boolean writable, Arena arena);

    /** The name of this side's rendezvous socket, for the HELLO; empty when there is none. */
    byte[] rendezvousName();

    /**
     * A fresh nonce for one HELLO, which the rendezvous now expects: a server that brings any
     * other is turned away at once. Expected for a few seconds, and once.
     */
    byte[] newNonce();

    /**
     * The descriptor a connection manager's epoll should watch for this side's same-host
     * machinery (the rendezvous, once a HELLO named it), or -1; when it is readable the manager
     * calls {@link #tend}.
     */
    default int watchFd() {
        return -1;
    }

    /**
     * On the manager's thread, when {@link #watchFd} is readable: takes in what waits there, so
     * that offers nobody asked for do not pile up in the kernel's queue of an idle process.
     */
    default void tend() {
    }

    /** A link for one new connection, with its ring made now; proven (or dropped) during the handshake. */
    SameHostLink link();

    /** The device closes: memory no live allocation uses is freed; the rest goes with its last allocation. */
    default void close() {
    }
}
