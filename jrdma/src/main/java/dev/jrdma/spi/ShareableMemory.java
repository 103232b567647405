package dev.jrdma.spi;

import java.lang.foreign.MemorySegment;

/**
 * Memory a device made so that peers on the same host can map it (shm: a memfd). Closing it
 * unmaps it here; a peer's mapping keeps the pages until the peer unmaps them too.
 */
public interface ShareableMemory extends AutoCloseable {
    MemorySegment segment();

    @Override
    void close();
}
