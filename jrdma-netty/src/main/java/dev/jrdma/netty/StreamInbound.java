package dev.jrdma.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;

/**
 * A stream's received bytes waiting to be read: each DATA message copied into a buffer of the
 * channel's allocator (the receive buffer is reposted at once), read in slices. Counts the messages
 * it holds, whose credits are owed back only once all their bytes were read. On the event loop.
 */
final class StreamInbound {
    /** All of memory, to copy to a ByteBuf's native address without making a segment per copy. */
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private final ArrayDeque<ByteBuf> queue = new ArrayDeque<>();
    /** Messages in the queue: their credits are not owed yet. */
    private int held;

    /** {@return the messages held, their credits not yet owed} */
    int held() {
        return held;
    }

    /** Queues {@code n} bytes of {@code data}, copied into a buffer of {@code allocator}. */
    void add(ByteBufAllocator allocator, MemorySegment data, int n) {
        ByteBuf buf = allocator.directBuffer(n, n);
        try {
            int at = buf.writerIndex();
            if (buf.hasMemoryAddress()) {
                MemorySegment.copy(data, 0, EVERYTHING, buf.memoryAddress() + at, n);
            } else if (buf.hasArray()) {
                MemorySegment.copy(data, ValueLayout.JAVA_BYTE, 0, buf.array(), buf.arrayOffset() + at, n);
            } else {
                buf.setBytes(at, data.asSlice(0, n).asByteBuffer());
            }
            buf.writerIndex(at + n);
        } catch (RuntimeException e) {
            buf.release();
            throw e;
        }
        queue.add(buf);
        held++;
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }

    /**
     * The next at most {@code max} queued bytes (a retained slice: the caller releases it), or null
     * when none is queued. {@link #finishedByLastRead} says whether it finished a message.
     */
    ByteBuf read(int max) {
        finished = false;
        ByteBuf head = queue.peek();
        if (head == null) {
            return null;
        }
        int n = Math.min(Math.max(1, max), head.readableBytes());
        ByteBuf out = head.readRetainedSlice(n);
        if (!head.isReadable()) {
            queue.poll().release();   // the slices keep the memory until they are released
            held--;
            finished = true;
        }
        return out;
    }

    private boolean finished;

    /** Whether the last {@link #read} took the last bytes of a message (its credit is owed now). */
    boolean finishedByLastRead() {
        return finished;
    }

    /** Drops everything queued; returns how many messages that was (their credits are owed now). */
    int discard() {
        int n = 0;
        ByteBuf b;
        while ((b = queue.poll()) != null) {
            b.release();
            held--;
            n++;
        }
        return n;
    }
}
