package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.IbvCompChannel;
import dev.jrdma.os.LibC;
import dev.jrdma.provider.verbs.ffi.LibIbverbs;
import dev.jrdma.spi.CompletionChannel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** An {@code ibv_comp_channel} with a non-blocking fd. */
final class VerbsCompletionChannel implements CompletionChannel {
    final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment cqOut = arena.allocate(ValueLayout.ADDRESS);
    private final MemorySegment ctxOut = arena.allocate(ValueLayout.ADDRESS);

    VerbsCompletionChannel(MemorySegment channel) {
        this.channel = channel;
        this.fd = IbvCompChannel.fd(channel);
        LibC.setNonBlocking(fd);
    }

    @Override
    public int fd() {
        return fd;
    }

    @Override
    public int drainEvents() {
        int n = 0;
        MemorySegment cq;
        while ((cq = LibIbverbs.tryGetCqEvent(channel, cqOut, ctxOut)) != null) {
            // Acknowledged one by one: ibv_destroy_cq waits for every event to be acknowledged.
            LibIbverbs.ackCqEvents(cq, 1);
            n++;
        }
        return n;
    }

    @Override
    public void close() {
        LibIbverbs.destroyCompChannel(channel);
        arena.close();
    }
}
