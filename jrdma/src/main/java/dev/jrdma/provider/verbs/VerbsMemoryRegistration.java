package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.IbvMr;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/** An {@code ibv_mr}. */
final class VerbsMemoryRegistration implements MemoryRegistration {
    private final MemorySegment mr;
    private final MemorySegment memory;
    private final int access;
    private final int lkey;
    private final int rkey;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Registered with IBV_ACCESS_MW_BIND: windows may be bound over it. */
    private final boolean windows;

    VerbsMemoryRegistration(MemorySegment mr, MemorySegment memory, int access) {
        this(mr, memory, access, false);
    }

    VerbsMemoryRegistration(MemorySegment mr, MemorySegment memory, int access, boolean windows) {
        this.windows = windows;
        this.mr = mr;
        this.memory = memory;
        this.access = access;
        this.lkey = IbvMr.lkey(mr);
        this.rkey = IbvMr.rkey(mr);
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    @Override
    public int lkey() {
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public long handle() {
        return windows ? mr.address() : 0;   // 0: no window can be bound over it (see the SPI)
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            LibIbverbs.deregMr(mr);
        }
    }
}
