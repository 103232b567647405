package dev.jrdma.spi;

/**
 * Who a queue pair is created for (the API's connection), as a connection manager sees it when
 * it creates one ({@link ConnectionManager#connect}, {@link CmEndpoint#accept}).
 *
 * <p>Threads: {@link #onQueuePair} is called once, on the thread creating the queue pair (the
 * manager's, or the one accepting), before the peer can send. From then on the owner makes every
 * {@code postSend}, {@code stage}/{@code postStaged} and {@code postRecv} while holding
 * {@link #postMonitor}, from any thread, one at a time; the completion queue is polled by the
 * one thread that owns it.
 */
public interface QueuePairOwner {
    /** The queue pair exists (INIT): post the receives now, before the peer can send. */
    void onQueuePair(QueuePair qp);

    /**
     * The monitor held around every post. A provider whose queue pair guards its send side
     * against its own progress thread may synchronize on this one rather than on a lock of its
     * own, so that a post takes one lock, not two (measured: 3.5% of a same-host round trip).
     */
    Object postMonitor();

    /**
     * The shared receive queue the queue pair takes its receives from, or null for a receive
     * queue of its own (the default). With one, the owner posts no receive on the queue pair
     * ({@code postRecv} returns EINVAL), as {@code ibv_post_recv} on such a QP does.
     */
    default Srq srq() {
        return null;
    }
}
