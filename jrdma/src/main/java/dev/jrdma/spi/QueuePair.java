package dev.jrdma.spi;

/**
 * A connected reliable queue pair. The post methods return 0 or an errno (as the verbs do) and
 * allocate nothing.
 *
 * <p>Threads: the post methods ({@link #postSend}, {@link #stage}/{@link #postStaged} with
 * {@link #firstUnposted}, {@link #postRecv}) are called from any thread, one at a time, under
 * the owner's {@link QueuePairOwner#postMonitor}; their completions come through the completion
 * queue, on the one thread polling it. {@link #queryState}, {@link #moveToError} and the
 * accessors may be called from any thread at any time. The queue pair is destroyed with its
 * {@link CmEndpoint}.
 */
public interface QueuePair {
    /** Send opcodes: the values of {@code enum ibv_wr_opcode}. */
    int WR_RDMA_WRITE = 0, WR_RDMA_WRITE_WITH_IMM = 1, WR_SEND = 2, WR_SEND_WITH_IMM = 3, WR_RDMA_READ = 4,
            WR_ATOMIC_CMP_AND_SWP = 5, WR_ATOMIC_FETCH_AND_ADD = 6;
    /**
     * {@code IBV_WR_FLUSH}: for devices whose {@link Device#flushes()} is true. No local buffer
     * (length 0); {@code remoteAddr}/{@code rkey} and {@code swap} bytes are the range;
     * {@code compareAdd} 1 for persistence, 0 for global visibility. Completes when the range
     * holds every write posted before it (and, for persistence, is on stable storage).
     */
    int WR_FLUSH = 14;
    /**
     * {@code IBV_WR_BIND_MW}: binds a type 2 memory window on this queue pair, for devices with
     * {@link Device#allocateWindow()}. No local buffer; {@code localAddr}/{@code length} are the
     * window's range, {@code remoteAddr} the window's {@link MemoryWindow#handle()},
     * {@code compareAdd} the registration's {@link MemoryRegistration#handle()}, {@code rkey} the
     * window's new key ({@link MemoryWindow#nextRkey()}) and {@code swap} the access bits. Only
     * this queue pair's peer can use the key.
     */
    int WR_BIND_MW = 8;

    /** Send flags: {@code enum ibv_send_flags}. */
    int SEND_FENCE = 1, SEND_SIGNALED = 1 << 1, SEND_SOLICITED = 1 << 2, SEND_INLINE = 1 << 3;

    /** QP states: {@code enum ibv_qp_state}. */
    int STATE_RESET = 0, STATE_INIT = 1, STATE_RTR = 2, STATE_RTS = 3, STATE_SQD = 4, STATE_SQE = 5, STATE_ERR = 6;

    int qpNum();

    /** What was granted (may exceed what was asked). */
    QueuePairSpec granted();

    /**
     * What {@link #postSend} may return for an unsignaled request that the provider carried out
     * during the call and that succeeded (shm's direct operations on a mapped peer region): it
     * produces no completion and holds no send-queue entry, so the poster forgets it at once.
     * Never for a signaled request, and never from {@link #postStaged}.
     */
    int DONE = -1;

    /** What {@link #postNow} returns when it did nothing: the request is to go through {@link #postSend}. */
    int NOT_NOW = -2;

    /**
     * An RDMA WRITE or READ carried out during the call, when the provider can do it at once and
     * in order (shm: the peer's region is mapped here and nothing earlier of this queue pair is
     * still on its way). Returns {@link #DONE} for an unsignaled one (nothing reports it), 0 for a
     * signaled one (its completion comes as {@link #postSend}'s would), or {@link #NOT_NOW} when it
     * did nothing, a failed check included: the request then goes through {@link #postSend},
     * which reports what was wrong. Only from the one thread that both posts to this queue pair
     * and polls its completion queue (a single-threaded owner): it takes no lock.
     */
    default int postNow(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                        int rkey) {
        return NOT_NOW;
    }

    /**
     * Posts one send-queue request with one scatter/gather entry ({@code length} 0: none).
     * {@code remoteAddr}/{@code rkey} for RDMA and atomics; {@code compareAdd}/{@code swap} for
     * atomics (the 8-byte prior value lands at {@code localAddr}); {@code imm} in host order.
     * Returns 0, an errno, or {@link #DONE}.
     */
    int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey,
                 long compareAdd, long swap, int imm);

    /**
     * How many requests {@link #stage} can hold for one {@link #postStaged}: at least the granted
     * send depth, so a chain never has to be cut for lack of room here.
     */
    int chainCapacity();

    /**
     * Fills request {@code index} of the chain (same arguments as {@link #postSend}); nothing is
     * posted until {@link #postStaged}.
     */
    void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
               int rkey, long compareAdd, long swap, int imm);

    /**
     * Posts staged requests {@code 0..count-1} as one linked list: one call, one doorbell.
     * Returns 0, or an errno; then {@link #firstUnposted()} says where the device stopped (the
     * requests before it were posted and will complete, the rest were not).
     */
    int postStaged(int count);

    /** After {@link #postStaged} failed: the index of the first request that was not posted. */
    int firstUnposted();

    /** Posts one receive of {@code length} bytes at {@code localAddr}. */
    int postRecv(long wrId, long localAddr, int length, int lkey);

    /** The state as the device reports it now ({@code ibv_query_qp}). */
    int queryState();

    /**
     * The local ack timeout exponent as the device reports it ({@code ibv_query_qp}), or -1 for a
     * transport without one (the software providers: their stream has its own timers).
     */
    default int queryAckTimeout() {
        return -1;
    }

    /**
     * The transport retry count and the RNR retry count the QP applies to its own requests, as the
     * device reports them, or -1 (software providers). Under rdma_cm they need not be this side's
     * config: see {@link dev.jrdma.ConnectionConfig#rnrRetry()}.
     */
    default int queryRetryCount() {
        return -1;
    }

    /**
     * The device port this queue pair uses as the device reports it ({@code ibv_query_qp}), or -1
     * for a transport without ports (the software providers).
     */
    default int queryPort() {
        return -1;
    }

    default int queryRnrRetry() {
        return -1;
    }

    /** The QP's minimum RNR timer (IB encoding) as the device reports it, or -1 (software providers). */
    default int queryMinRnrTimer() {
        return -1;
    }

    /**
     * The traffic class (IPv4 TOS / IPv6 traffic class byte) the QP's packets carry, as the device
     * reports it (verbs: the address vector's GRH) or the socket has it (tcp); -1 where there are
     * no packets (shm).
     */
    default int queryTrafficClass() {
        return -1;
    }

    /** The service level of the QP's address vector as the device reports it, or -1 (software providers). */
    default int queryServiceLevel() {
        return -1;
    }

    /** The flow label of the QP's address vector (GRH) as the device reports it, or -1 (software providers). */
    default int queryFlowLabel() {
        return -1;
    }

    /** Moves the QP to the error state: everything outstanding completes, flushed. */
    void moveToError();

    /** "RTS", "ERR"... */
    static String stateName(int state) {
        String[] names = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
        return state >= 0 && state < names.length ? names[state] : "STATE_" + state;
    }
}
