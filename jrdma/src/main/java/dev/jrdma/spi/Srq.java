package dev.jrdma.spi;

/**
 * A provider's shared receive queue ({@code ibv_srq}): one queue of posted receives that every
 * queue pair created with it ({@link QueuePairOwner#sharedReceiveQueue}) takes its incoming
 * SENDs and WRITE_WITH_IMMs from. A receive completes on the completion queue of the queue pair
 * whose message consumed it, with the {@code wrId} it was posted with.
 *
 * <p>Threads: {@link #postRecv} and {@link #armLimit} are made by the owner one at a time (the
 * API layer posts under one lock); queue pairs of any thread consume receives concurrently.
 */
public interface Srq {
    /** {@return how many receives can be posted at once (what the device granted, at least what was asked)} */
    int capacity();

    /**
     * Posts one receive into {@code length} bytes at {@code localAddr}, registered with
     * {@code lkey} for local write. Returns 0, ENOMEM when the queue is full, or EINVAL for a
     * buffer outside a registration of this device.
     */
    int postRecv(long wrId, long localAddr, int length, int lkey);

    /**
     * Arms the limit event once: when a consumed receive leaves fewer than {@code limit} posted,
     * the {@code onLimit} the queue was created with runs once (on a provider thread; it must
     * not block) and the queue is unarmed until armed again ({@code IBV_EVENT_SRQ_LIMIT_REACHED}
     * semantics). 0 unarms. A limit above {@link #capacity} is refused with an
     * {@link IllegalArgumentException}.
     */
    void armLimit(int limit);

    /**
     * Sets the fair share: while no more than {@code reserve} receives are posted, a queue pair
     * holding {@code perConnection} or more (claimed for a message, or completed and not posted
     * again with the same {@code wrId}) takes none of them and waits as for an empty queue (RNR),
     * so that queue pairs holding fewer always find one. Returns whether the provider enforces it:
     * a software queue does (tcp, shm); a device's own (verbs: the NIC hands receives out first
     * come, first served) cannot, and returns false. Owner's thread, as {@link #postRecv}.
     *
     * @throws IllegalArgumentException for {@code perConnection} below 1 or a reserve outside 0 to {@link #capacity}
     */
    default boolean shareFairly(int perConnection, int reserve) {
        if (perConnection < 1 || reserve < 0 || reserve > capacity()) {
            throw new IllegalArgumentException("a fair share of " + perConnection + " receives per connection with a"
                    + " reserve of " + reserve + " on a shared receive queue of " + capacity());
        }
        return false;
    }

    /** Destroys the queue; no queue pair may use it any more. */
    void close();
}
