package dev.jrdma.spi;

import java.lang.foreign.MemorySegment;

/** Memory registered with a device: local key for our requests, remote key for the peer's. */
public interface MemoryRegistration extends AutoCloseable {
    MemorySegment memory();

    int lkey();

    int rkey();

    /** {@link AccessFlags} bits it was registered with. */
    int access();

    /**
     * The provider's native object (verbs: the {@code ibv_mr *}) when a memory window can be bound
     * over it ({@link QueuePair#WR_BIND_MW}: registered with {@link AccessFlags#MW_BIND}); else 0.
     */
    default long handle() {
        return 0;
    }

    /** Deregisters: later use of its keys, local or remote, fails. Idempotent. */
    @Override
    void close();

    /**
     * After {@link #close}: runs {@code then} once nothing outside this process can reach the
     * memory any more, so that it may be reused. At once where deregistering revokes access
     * (verbs: the device refuses the rkey; tcp: the progress thread checks it); for memory that
     * same-host peers mapped (shm), once each of them said it unmapped it, or its connection ended.
     * Runs on the calling thread or on an IO thread.
     */
    default void whenReleasedByPeers(Runnable then) {
        then.run();
    }
}
