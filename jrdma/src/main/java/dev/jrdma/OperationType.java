package dev.jrdma;

/**
 * The kinds of operation a connection does, as its {@link ConnectionStatistics} count them: one
 * for each public operation of {@link Connection}, and {@link #RECEIVE} for what arrives.
 */
public enum OperationType {
    /** {@link Connection#send(LocalRegion)}. */
    SEND,
    /** {@link Connection#sendWithImm(int, LocalRegion)}. */
    SEND_WITH_IMM,
    /** {@link Connection#write(LocalRegion, RemoteRegion)}. */
    WRITE,
    /** {@link Connection#writeWithImm(LocalRegion, RemoteRegion, int)}. */
    WRITE_WITH_IMM,
    /** {@link Connection#read(RemoteRegion, LocalRegion)}. */
    READ,
    /** {@link Connection#compareAndSwap(RemoteRegion, long, long)}. */
    COMPARE_AND_SWAP,
    /** {@link Connection#fetchAndAdd(RemoteRegion, long)}. */
    FETCH_AND_ADD,
    /** {@link Connection#maskedCompareAndSwap(RemoteRegion, long, long, long, long)}. */
    MASKED_COMPARE_AND_SWAP,
    /** {@link Connection#maskedFetchAndAdd(RemoteRegion, long, long)}. */
    MASKED_FETCH_AND_ADD,
    /** {@link Connection#atomicWrite(RemoteRegion, long)}. */
    ATOMIC_WRITE,
    /** {@link Connection#flush(RemoteRegion, FlushType)}. */
    FLUSH,
    /** A message received: a send's, or a write-with-immediate's notice (its bytes counted, 0 for a write's). */
    RECEIVE,
    /**
     * A memory window bound on the connection's queue pair for {@link LocalRegion#toRemoteFor}
     * (verbs, where the device has type 2B windows); its bytes are the window's length.
     */
    BIND_WINDOW
}
