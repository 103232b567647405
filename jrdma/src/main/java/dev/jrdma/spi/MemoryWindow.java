package dev.jrdma.spi;

/**
 * A type 2 memory window ({@code ibv_mw}): made by {@link Device#allocateWindow()}, bound on one
 * queue pair by a {@link QueuePair#WR_BIND_MW} work request, revoked by {@link #close()}. Its
 * owner serialises its use.
 */
public interface MemoryWindow extends AutoCloseable {
    /** {@return the native object (verbs: the {@code ibv_mw *}), for the bind work request} */
    long handle();

    /** {@return the key it has now (its last bind's, or its first)} */
    int rkey();

    /** {@return the key its next bind gives: {@link #rkey()} with its low 8 bits stepped ({@code ibv_inc_rkey})} */
    int nextRkey();

    /**
     * Says a bind under {@code rkey} was posted: the window's key is that from now on (rxe's
     * provider does not write a type 2 window's new key back itself, and checks the next bind
     * against it).
     */
    void bound(int rkey);

    /** Deallocates it ({@code ibv_dealloc_mw}), which revokes a bound window's key. Idempotent. */
    @Override
    void close();
}
