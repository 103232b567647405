package dev.jrdma.netty;

import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import io.netty.buffer.ByteBuf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * A stream's registered send area: fixed slots of one message each (up to the peer's receive
 * buffer size), used in ring order, since sends complete in order. Written bytes are copied into the
 * slot being filled; a full slot, or the last one at a flush, is sent as one message and is free
 * again when that send completes. On the event loop.
 */
final class SendArea {
    /** All of memory, to copy from a ByteBuf's native address without making a segment per copy. */
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private final LocalRegion area;
    private final MemorySegment memory;
    /** The area as a ByteBuffer, for the copies from buffers without an address or array. */
    private final ByteBuffer buffer;
    private final LocalRegion empty;
    private final int slotSize;
    private final int slots;
    /** Each slot's last message as a region, kept while messages of that length follow (no slice per message). */
    private final LocalRegion[] slotMessage;
    private int oldest;
    private int free;
    private int filling = -1;
    private int filled;
    private boolean closed;

    SendArea(Rdma rdma, int slots, int slotSize) {
        this.slots = slots;
        this.slotSize = slotSize;
        this.area = rdma.allocateUninitialized((long) slots * slotSize);
        this.memory = area.segment();
        this.buffer = memory.asByteBuffer();
        this.empty = area.slice(0, 0);
        this.free = slots;
        this.slotMessage = new LocalRegion[slots];
    }

    /** A region of no bytes in the area, for control messages. */
    LocalRegion empty() {
        return empty;
    }

    boolean hasFreeSlot() {
        return free > 0;
    }

    /** Whether a slot is being filled. */
    boolean filling() {
        return filling >= 0;
    }

    /** {@return the bytes in the slot being filled} */
    int filled() {
        return filled;
    }

    /** {@return the bytes the slot being filled still takes (0: none is being filled)} */
    int roomInSlotBeingFilled() {
        return filling < 0 ? 0 : slotSize - filled;
    }

    /** Takes the next free slot to fill (there is one: {@link #hasFreeSlot}). */
    void startFill() {
        int next = oldest + (slots - free);
        filling = next >= slots ? next - slots : next;
        free--;
        filled = 0;
    }

    /** Copies as much of {@code length} bytes of {@code buf} from {@code index} as the slot takes; returns how many. */
    int fill(ByteBuf buf, int index, int length) {
        int n = Math.min(length, slotSize - filled);
        long offset = (long) filling * slotSize + filled;
        if (buf.hasMemoryAddress()) {
            MemorySegment.copy(EVERYTHING, buf.memoryAddress() + index, memory, offset, n);
        } else if (buf.hasArray()) {
            MemorySegment.copy(buf.array(), buf.arrayOffset() + index, memory, ValueLayout.JAVA_BYTE, offset, n);
        } else {
            buffer.clear().position((int) offset).limit((int) offset + n);
            buf.getBytes(index, buffer);
        }
        filled += n;
        return n;
    }

    boolean full() {
        return filled == slotSize;
    }

    /** The slot being filled, as the message to send; no slot is being filled after. */
    LocalRegion takeFilled() {
        int slot = filling;
        int length = filled;
        filling = -1;
        filled = 0;
        LocalRegion message = slotMessage[slot];
        if (message == null || message.length() != length) {
            message = area.slice((long) slot * slotSize, length);
            slotMessage[slot] = message;
        }
        return message;
    }

    /** The oldest slot's message completed: the slot is free. */
    void oldestDone() {
        oldest = oldest + 1 == slots ? 0 : oldest + 1;
        free++;
    }

    /** Gives the area back; jrdma holds its memory until every send that uses it ended. Once. */
    void close() {
        if (!closed) {
            closed = true;
            area.close();
        }
    }
}
