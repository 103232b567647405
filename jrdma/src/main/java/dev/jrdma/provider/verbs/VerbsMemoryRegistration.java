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

    VerbsMemoryRegistration(MemorySegment mr, MemorySegment memory, int access) {
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
        return mr.address();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            LibIbverbs.deregMr(mr);
        }
    }
}
