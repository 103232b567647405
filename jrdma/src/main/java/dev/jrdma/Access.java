package dev.jrdma;

import dev.jrdma.spi.AccessFlags;

/** What may be done to a registered region, locally and by peers. */
public enum Access {
    /** The device may write into it (receives, read results, atomic results). Needed with REMOTE_WRITE/ATOMIC. */
    LOCAL_WRITE(AccessFlags.LOCAL_WRITE),
    /** Peers may write into it (RDMA write, write with immediate). */
    REMOTE_WRITE(AccessFlags.REMOTE_WRITE),
    /** Peers may read it (RDMA read; a flush towards it reads one byte). */
    REMOTE_READ(AccessFlags.REMOTE_READ),
    /** Peers may run atomics on its 8-byte aligned words (compare-and-swap, fetch-and-add and their masked forms). */
    REMOTE_ATOMIC(AccessFlags.REMOTE_ATOMIC);

    final int bit;

    Access(int bit) {
        this.bit = bit;
    }

    static int bits(Access... access) {
        int b = 0;
        for (Access a : access) {
            b |= a.bit;
        }
        return b;
    }
}
