package dev.jrdma;

import dev.jrdma.spi.AccessFlags;

/** What may be done to a registered region, locally and by peers. */
public enum Access {
    /** The device may write into it (receives, read results, atomic results). Needed with REMOTE_WRITE/ATOMIC. */
    LOCAL_WRITE(AccessFlags.LOCAL_WRITE),
    REMOTE_WRITE(AccessFlags.REMOTE_WRITE),
    REMOTE_READ(AccessFlags.REMOTE_READ),
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
