package dev.jrdma;

/** What {@link Connection#flush} waits for. */
public enum FlushType {
    /** The writes are in the peer's memory, visible to its CPU. */
    VISIBILITY,
    /**
     * The writes are persistent: only towards memory whose owner declared direct write to
     * persistent memory ({@link LocalRegion#declareDirectWriteToPmem()}), as librpma's
     * {@code RPMA_FLUSH_TYPE_PERSISTENT} requires.
     */
    PERSISTENT
}
