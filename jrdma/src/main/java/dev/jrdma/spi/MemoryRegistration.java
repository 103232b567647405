package dev.jrdma.spi;

import java.lang.foreign.MemorySegment;

/** Memory registered with a device: local key for our requests, remote key for the peer's. */
public interface MemoryRegistration extends AutoCloseable {
    MemorySegment memory();

    int lkey();

    int rkey();

    /** {@link AccessFlags} bits it was registered with. */
    int access();

    /** Deregisters: later use of its keys, local or remote, fails. Idempotent. */
    @Override
    void close();
}
