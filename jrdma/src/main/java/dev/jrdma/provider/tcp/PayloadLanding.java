package dev.jrdma.provider.tcp;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.MemorySegment;

/**
 * Where the payload of the frame being read goes: into a registration (a WRITE, a SEND's
 * receive, a READ's answer), into a parked frame's own buffer, or nowhere (read and dropped).
 * The registration is entered only around each copy or recv into it, never across passes, so
 * that closing it waits for one copy at most, whatever the peer does; if it was closed meanwhile
 * the rest is dropped and the frame ends {@link #end revoked}. Progress thread only.
 */
final class PayloadLanding {
    private long dest;           // where the next byte goes; 0: dropped
    private long left;           // bytes of the payload still to come
    private TcpMemoryRegistration registration;   // null: a parked frame's buffer, or dropped
    private boolean revoked;     // the registration closed while the payload landed
    /** The registration entered by the last {@link #enter}: exited even if the connection ended meanwhile. */
    private TcpMemoryRegistration entered;

    /** A new frame: no payload yet. */
    void reset() {
        dest = 0;
        left = 0;
        registration = null;
        revoked = false;
    }

    /** The payload's {@code length} bytes go to {@code address} in {@code r} (null: memory of our own, a parked buffer). */
    void into(TcpMemoryRegistration r, long address, long length) {
        registration = r;
        dest = address;
        left = length;
    }

    /** The payload's {@code length} bytes are read and dropped. */
    void drop(long length) {
        dest = 0;
        left = length;
    }

    long left() {
        return left;
    }

    /** Where the next byte goes; 0 when the payload is dropped. */
    long dest() {
        return dest;
    }

    /**
     * Enters the registration for one copy or recv; false (and the rest of the payload is
     * dropped) when it was closed meanwhile. No registration: nothing to enter.
     */
    boolean enter() {
        TcpMemoryRegistration r = registration;
        if (r == null || r.enter()) {
            entered = r;
            return true;
        }
        revoked = true;
        dest = 0;
        return false;
    }

    void exit() {
        TcpMemoryRegistration r = entered;
        entered = null;
        if (r != null) {
            r.exit();
        }
    }

    /** {@code n} bytes landed at {@link #dest} (a recv straight into it). */
    void advance(long n) {
        dest += n;
        left -= n;
    }

    /** Copies {@code count} bytes at {@code from} to where they go (or drops them); true when the payload is complete. */
    boolean place(long from, int count) {
        if (dest != 0 && enter()) {
            try {
                MemorySegment.copy(AddressSpace.ALL, from, AddressSpace.ALL, dest, count);
            } finally {
                exit();
            }
            dest += count;
        }
        left -= count;
        return left == 0;
    }

    /** The frame is done: lets go of the registration; true when it was closed while the payload landed. */
    boolean end() {
        registration = null;
        boolean was = revoked;
        revoked = false;
        return was;
    }

    /** The connection ends: a payload being placed lets go of its registration. */
    void release() {
        registration = null;
    }
}
