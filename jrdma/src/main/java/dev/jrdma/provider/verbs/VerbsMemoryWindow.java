package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.IbvMw;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.MemoryWindow;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/** A type 2 {@code ibv_mw}; its key is written back at each bind (rxe's provider does not). */
final class VerbsMemoryWindow implements MemoryWindow {
    private final MemorySegment mw;
    private final MemorySegment deallocFn;
    private final AtomicBoolean closed = new AtomicBoolean();

    VerbsMemoryWindow(MemorySegment mw, MemorySegment deallocFn) {
        this.mw = mw;
        this.deallocFn = deallocFn;
    }

    @Override
    public long handle() {
        return mw.address();
    }

    @Override
    public int rkey() {
        return IbvMw.rkey(mw);
    }

    @Override
    public int nextRkey() {
        return IbvMw.nextRkey(IbvMw.rkey(mw));
    }

    @Override
    public void bound(int rkey) {
        IbvMw.rkey(mw, rkey);
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            LibIbverbs.deallocMw(deallocFn, mw);
        }
    }
}
