package dev.jrdma.provider.tcp;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.MemorySegment;

/**
 * Where the payload of the frame being read goes: into a registration (a WRITE, a SEND's
 * receive, a READ's answer), into a parked frame's own chunks (drawn from the process's budget as
 * the bytes arrive, see {@link ParkedRequests#nextChunk}), or nowhere (read and dropped).
 * The registration is entered only around each copy or recv into it, never across passes, so
 * that closing it waits for one copy at most, whatever the peer does; if it was closed meanwhile
 * the rest is dropped and the frame ends {@link #end revoked}. Progress thread only.
 */
final class PayloadLanding {
    private long dest;           // where the next byte goes; 0: dropped
    private long left;           // bytes of the payload still to come
    private TcpMemoryRegistration registration;   // null: a parked frame's buffer, or dropped
    /** Not null: the payload is parked, into chunks of this connection's parked requests. */
    private ParkedRequests parkedInto;
    private long room;           // parked: bytes left at dest before the next chunk is needed
    private boolean revoked;     // the registration closed while the payload landed
    /** The registration entered by the last {@link #enter}: exited even if the connection ended meanwhile. */
    private TcpMemoryRegistration entered;

    /** A new frame: no payload yet. */
    void reset() {
        dest = 0;
        left = 0;
        registration = null;
        revoked = false;
        parkedInto = null;
        room = 0;
    }

    /** Takes {@code o}'s state (a payload set aside while other frames are applied, then taken up again). */
    void copyFrom(PayloadLanding o) {
        dest = o.dest;
        left = o.left;
        registration = o.registration;
        parkedInto = o.parkedInto;
        room = o.room;
        revoked = o.revoked;
    }

    /** Parked: what is left of the current chunk (no new one drawn, unlike {@link #room}). */
    long roomInChunk() {
        return room;
    }

    /** The payload's {@code length} bytes go to {@code address} in {@code r}. */
    void into(TcpMemoryRegistration r, long address, long length) {
        registration = r;
        parkedInto = null;
        dest = address;
        left = length;
    }

    /** The payload's {@code length} bytes are parked, in chunks of {@code p}'s filling request. */
    void intoParked(ParkedRequests p, long length) {
        registration = null;
        parkedInto = p;
        dest = 0;
        room = 0;
        left = length;
    }

    /** The payload's {@code length} bytes are read and dropped. */
    void drop(long length) {
        dest = 0;
        left = length;
        parkedInto = null;
    }

    long left() {
        return left;
    }

    /** Where the next byte goes; 0 when the payload is dropped (or parked, before {@link #room}). */
    long dest() {
        return dest;
    }

    /**
     * How many bytes may be received straight at {@link #dest} now: the payload left, or, parked,
     * what is left of its chunk (a new one is drawn when it is full). 0 when the payload is
     * dropped, or parked and the process's budget has no room for a chunk now.
     */
    long room() {
        if (parkedInto == null) {
            return dest == 0 ? 0 : left;
        }
        if (room == 0 && left > 0) {
            long n = parkedInto.nextChunk(left);
            if (n > 0) {
                dest = parkedInto.chunkAddress();
                room = n;
            }
        }
        return room;
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

    /** {@code n} bytes (at most {@link #room}) landed at {@link #dest} (a recv straight into it). */
    void advance(long n) {
        dest += n;
        left -= n;
        room -= n;   // (only a parked payload's room is read)
    }

    /**
     * Copies {@code count} bytes at {@code from} to where they go (or drops them): how many were
     * taken, fewer only when the payload is parked and the process's budget has no room for the
     * rest now.
     */
    int place(long from, int count) {
        if (parkedInto != null) {
            return placeParked(from, count);
        }
        if (dest != 0 && enter()) {
            try {
                MemorySegment.copy(AddressSpace.ALL, from, AddressSpace.ALL, dest, count);
            } finally {
                exit();
            }
            dest += count;
        }
        left -= count;
        return count;
    }

    private int placeParked(long from, int count) {
        int done = 0;
        while (done < count && room() > 0) {
            int n = (int) Math.min(room, count - done);
            MemorySegment.copy(AddressSpace.ALL, from + done, AddressSpace.ALL, dest, n);
            advance(n);
            done += n;
        }
        return done;
    }

    /** The frame is done: lets go of the registration; true when it was closed while the payload landed. */
    boolean end() {
        registration = null;
        parkedInto = null;
        boolean was = revoked;
        revoked = false;
        return was;
    }

    /** The connection ends: a payload being placed lets go of its registration. */
    void release() {
        registration = null;
        parkedInto = null;
        dest = 0;
    }
}
