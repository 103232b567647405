package dev.jrdma;

import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.MemoryWindow;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What {@link LocalRegion#toRemoteFor} gives on a device with memory windows: a type 2 window
 * bound on one connection's queue pair over part of a registration, seen by the rest of the
 * library as a registration of its own. Closing it deallocates the window, which revokes its key.
 */
final class WindowRegistration implements MemoryRegistration {
    private final MemoryWindow window;
    private final MemorySegment memory;
    private final int lkey;
    private final int rkey;
    private final int access;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Completes when the bind ran on the device (fails with why it did not). */
    final CompletableFuture<Void> bound;

    WindowRegistration(MemoryWindow window, MemorySegment memory, int lkey, int rkey, int access,
                       CompletableFuture<Void> bound) {
        this.bound = bound;
        this.window = window;
        this.memory = memory;
        this.lkey = lkey;
        this.rkey = rkey;
        this.access = access;
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
    public void close() {
        if (closed.compareAndSet(false, true)) {
            window.close();
        }
    }
}
