package dev.jrdma.provider.tcp;

import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Memory registered with a tcp device: a key the peer names it by, and a fence between the
 * owner closing it and a progress thread placing or sending its bytes. A progress thread
 * {@link #enter}s before touching the memory and {@link #exit}s after; {@link #close} marks
 * it closed, then waits for those inside to leave, and for any direct (same-host) operation
 * under way (those check the registration under their queue pair's lock instead of
 * entering, see {@link TcpRegistrations#quiesce}); so once close returns nothing touches the
 * memory again and the owner may free it.
 */
final class TcpMemoryRegistration implements MemoryRegistration {
    private final TcpRegistrations table;
    private final MemorySegment memory;
    private final int key;
    private final int access;
    /**
     * The one queue pair whose peer may use this key (its {@link TcpQueuePair#scope}), or 0:
     * any. A scope, not a qpNum: qpNums wrap at 2^24 and anyone who reaches the port moves them.
     */
    private final long onlyScope;
    private final AtomicInteger inside = new AtomicInteger();
    private volatile boolean closed;
    /** While closing: the close itself, and the peers told to unmap that have not said so; guarded by this. */
    private int peersHolding;
    /** What runs when peersHolding reaches 0 after close; guarded by this. */
    private Runnable released;
    /** Queue pairs whose peers mapped this region (same host): told when it closes. */
    private final java.util.concurrent.CopyOnWriteArrayList<TcpQueuePair> sharedWith =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    TcpMemoryRegistration(TcpRegistrations table, MemorySegment memory, int key, int access, long onlyScope) {
        this.table = table;
        this.memory = memory;
        this.key = key;
        this.access = access;
        this.onlyScope = onlyScope;
    }

    /** Whether the peer of the queue pair with {@code scope} may use this key. */
    boolean reachableFrom(long scope) {
        return onlyScope == 0 || onlyScope == scope;
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    /** Whether {@code [address, address + length)} lies inside; overflow-safe. */
    boolean covers(long address, long length) {
        long base = memory.address();
        return length >= 0 && address >= base && address - base <= memory.byteSize() - length;
    }

    /** Enters the fence; false when closed (then the memory must not be touched). */
    boolean enter() {
        inside.incrementAndGet();
        if (closed) {
            inside.decrementAndGet();
            return false;
        }
        return true;
    }

    void exit() {
        inside.decrementAndGet();
    }

    void sharedWith(TcpQueuePair qp) {
        sharedWith.addIfAbsent(qp);
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            peersHolding = 1;   // this close, until it has told every peer
        }
        table.remove(this);
        // Peers that reach it directly stop: they go back to asking us (and are refused), and
        // say when they have (whenReleasedByPeers). An operation of theirs under way until then
        // still lands in the shared pages, which stay valid memory while any process maps them.
        for (TcpQueuePair qp : sharedWith) {
            synchronized (this) {
                peersHolding++;
            }
            if (!qp.sendUnmap(this)) {
                peerLetGo();
            }
        }
        sharedWith.clear();
        // Both sides use sequentially consistent operations (volatile write, then read of the
        // counter; counter increment, then volatile read), so a thread either sees closed or is counted.
        while (inside.get() != 0) {
            Thread.onSpinWait();
        }
        table.quiesce();   // direct operations on posting threads do not enter: wait them out
        peerLetGo();
    }

    /** A peer told to unmap it did (or its connection ended); the last one runs what waits. */
    void peerLetGo() {
        Runnable run = null;
        synchronized (this) {
            if (--peersHolding == 0) {
                run = released;
                released = null;
            }
        }
        if (run != null) {
            run.run();
        }
    }

    @Override
    public void whenReleasedByPeers(Runnable then) {
        synchronized (this) {
            if (!closed) {
                throw new IllegalStateException("whenReleasedByPeers: " + this + " is not closed");
            }
            if (peersHolding != 0) {
                Runnable before = released;
                released = before == null ? then : () -> {
                    before.run();
                    then.run();
                };
                return;
            }
        }
        then.run();
    }

    @Override
    public String toString() {
        return "tcp MR key 0x" + Integer.toHexString(key) + " [0x" + Long.toHexString(memory.address()) + ", +"
                + memory.byteSize() + ")";
    }
}
