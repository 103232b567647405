package dev.jrdma.provider.shm;

import dev.jrdma.os.AddressSpace;
import dev.jrdma.provider.tcp.FrameRing;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The shm provider's {@link FrameRing}: a single-producer single-consumer byte stream in a memfd
 * shared with a peer of this host, what a same-host connection sends its frames through instead
 * of the socket, so that messages, acks and responses cost copies, not system calls. Each side
 * writes its own ring and reads the peer's; every position the peer writes is checked.
 *
 * <pre>
 *  0                 64                128               192               256
 *  +-----------------+-----------------+-----------------+-----------------+----------------
 *  | produced (u64)  | consumed (u64)  | consumer asleep | producer waits  | data: capacity bytes
 *  +-----------------+-----------------+-----------------+-----------------+----------------
 * </pre>
 *
 * Positions only grow (byte counts); the data at position p is at {@code p % capacity}. The
 * producer publishes {@code produced} after copying, the consumer {@code consumed} after
 * reading (release stores, acquire loads). The two flags let either side sleep: a consumer
 * about to sleep sets "asleep" and the producer, seeing it after publishing, rings the
 * doorbell (a byte on the socket, which the sleeper's epoll watches); a producer out of room
 * sets "waits" and the consumer rings once it has made room.
 */
public final class SharedByteRing implements FrameRing {
    /** The ring's header before its data: four positions and flags, a cache line each. */
    public static final long HEADER = 256;
    private static final long PRODUCED = 0, CONSUMED = 64, ASLEEP = 128, WAITS = 192;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment ring;
    private final long capacity;

    /** A ring over {@code memory} (its header, then {@code byteSize - HEADER} bytes of data). */
    public SharedByteRing(MemorySegment memory) {
        this.ring = memory;
        this.capacity = memory.byteSize() - HEADER;
    }

    public long capacity() {
        return capacity;
    }

    // ---------------------------------------------------------------- producer

    /**
     * Copies up to {@code length} bytes from {@code address} into the ring, as far as there is
     * room; returns how many, or -1 when the consumer's position is impossible (a corrupt or
     * hostile peer: nothing is written). Call {@link #publish} after one or more writes.
     */
    @Override
    public long write(long address, long length, long at) {
        long consumed = (long) LONG.getAcquire(ring, CONSUMED);
        long used = at - consumed;
        if (used < 0 || used > capacity) {
            return -1;   // the peer (the consumer) says it read what was never written: corrupt or hostile
        }
        long room = capacity - used;
        long n = Math.min(room, length);
        if (n <= 0) {
            return 0;
        }
        long off = Math.floorMod(at, capacity);   // positions are the peer's to write: never a negative offset
        long first = Math.min(n, capacity - off);
        MemorySegment.copy(AddressSpace.ALL, address, ring, HEADER + off, first);
        if (n > first) {
            MemorySegment.copy(AddressSpace.ALL, address + first, ring, HEADER, n - first);
        }
        return n;
    }

    /** The position after what has been written (the producer's own view). */
    @Override
    public long produced() {
        return (long) LONG.getAcquire(ring, PRODUCED);
    }

    /** Makes the bytes up to {@code position} visible; true when the consumer asked to be woken. */
    @Override
    public boolean publish(long position) {
        LONG.setRelease(ring, PRODUCED, position);
        VarHandle.fullFence();   // the flag is read after the publish (Dekker with the consumer's arm)
        if ((long) LONG.getVolatile(ring, ASLEEP) != 0) {
            LONG.setVolatile(ring, ASLEEP, 0L);
            return true;
        }
        return false;
    }

    /** The producer has bytes waiting for room: the consumer should ring when it makes some. */
    @Override
    public void waitForRoom(boolean waiting) {
        LONG.setVolatile(ring, WAITS, waiting ? 1L : 0L);
    }

    // ---------------------------------------------------------------- consumer

    /** Bytes readable now, or -1 when the producer's position is impossible (a corrupt or hostile peer). */
    public long available() {
        long produced = (long) LONG.getAcquire(ring, PRODUCED);
        long consumed = (long) LONG.getOpaque(ring, CONSUMED);
        long n = produced - consumed;
        return n < 0 || n > capacity ? -1 : n;
    }

    /** Copies up to {@code length} readable bytes to {@code address}; returns how many (0: none, -1: corrupt). */
    @Override
    public long read(long address, long length) {
        long avail = available();
        if (avail <= 0) {
            return avail;
        }
        long consumed = (long) LONG.getOpaque(ring, CONSUMED);
        long n = Math.min(avail, length);
        long off = Math.floorMod(consumed, capacity);
        long first = Math.min(n, capacity - off);
        MemorySegment.copy(ring, HEADER + off, AddressSpace.ALL, address, first);
        if (n > first) {
            MemorySegment.copy(ring, HEADER, AddressSpace.ALL, address + first, n - first);
        }
        LONG.setRelease(ring, CONSUMED, consumed + n);
        return n;
    }

    /** After reading: true when the producer waits for room (and the flag is taken: ring once). */
    @Override
    public boolean producerWaits() {
        if ((long) LONG.getOpaque(ring, WAITS) != 0) {
            VarHandle.fullFence();
            LONG.setVolatile(ring, WAITS, 0L);
            return true;
        }
        return false;
    }

    /**
     * About to sleep: asks the producer to ring (it takes the flag back when it does). Returns
     * true when bytes are readable already; the flag is set before the check (Dekker with
     * {@link #publish}).
     */
    @Override
    public boolean arm() {
        LONG.setVolatile(ring, ASLEEP, 1L);
        VarHandle.fullFence();
        return available() != 0;
    }
}
