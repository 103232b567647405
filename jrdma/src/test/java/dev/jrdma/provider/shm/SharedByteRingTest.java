package dev.jrdma.provider.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** The shm stream ring on its own: wrap-around, room, the sleep flags, and positions a hostile peer could forge. */
class SharedByteRingTest {
    @Test
    void bytesComeOutInOrderAcrossManyWrapArounds() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SharedByteRing.HEADER + 1000, 64);
            SharedByteRing producer = new SharedByteRing(mem), consumer = new SharedByteRing(mem);
            MemorySegment src = arena.allocate(700), dst = arena.allocate(700);
            Random r = new Random(3);
            long produced = 0, consumed = 0;
            byte next = 0, expect = 0;
            for (int round = 0; round < 2000; round++) {
                int n = 1 + r.nextInt(700);
                for (int i = 0; i < n; i++) {
                    src.set(ValueLayout.JAVA_BYTE, i, next++);
                }
                long w = producer.write(src.address(), n, produced);
                assertEquals(Math.min(n, 1000 - (produced - consumed)), w, "as much as there is room for");
                next -= (byte) (n - w);   // what did not fit is written again next round
                produced += w;
                producer.publish(produced);
                long got = consumer.read(dst.address(), r.nextInt(701));
                consumed += got;
                for (int i = 0; i < got; i++) {
                    assertEquals(expect++, dst.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of round " + round);
                }
            }
            long rest;
            while ((rest = consumer.read(dst.address(), 700)) > 0) {
                for (int i = 0; i < rest; i++) {
                    assertEquals(expect++, dst.get(ValueLayout.JAVA_BYTE, i));
                }
            }
            assertEquals(next, expect, "everything written came out");
        }
    }

    @Test
    void aFullRingTakesNothingAndTheSleepFlagsAreTakenBackByTheWaker() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SharedByteRing.HEADER + 64, 64);
            SharedByteRing ring = new SharedByteRing(mem);
            MemorySegment src = arena.allocate(100);
            assertEquals(64, ring.write(src.address(), 100, 0));
            assertEquals(0, ring.write(src.address(), 1, 64), "full");
            assertFalse(ring.arm(), "written but not published: nothing is readable yet, so it may sleep");
            assertTrue(ring.publish(64), "the consumer armed: the producer rings, once");
            assertFalse(ring.publish(64), "and takes the flag back");
            assertTrue(ring.arm(), "bytes are readable: do not sleep");
            ring.waitForRoom(true);
            assertTrue(ring.producerWaits());
            assertFalse(ring.producerWaits(), "rung once");
            MemorySegment dst = arena.allocate(64);
            assertEquals(64, ring.read(dst.address(), 64));
            assertArrayEquals(src.asSlice(0, 64).toArray(ValueLayout.JAVA_BYTE), dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void impossiblePositionsFromAHostilePeerAreReportedNotRead() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SharedByteRing.HEADER + 64, 64);
            SharedByteRing ring = new SharedByteRing(mem);
            MemorySegment dst = arena.allocate(64);
            mem.set(ValueLayout.JAVA_LONG, 0, 1000);   // produced: more than the ring holds beyond consumed
            assertEquals(-1, ring.available());
            assertEquals(-1, ring.read(dst.address(), 64));
            mem.set(ValueLayout.JAVA_LONG, 0, 0);
            mem.set(ValueLayout.JAVA_LONG, 64, 10);    // consumed beyond produced
            assertEquals(-1, ring.read(dst.address(), 64));
            // The producer side: a consumer position beyond what was written, or far behind it
            // (0.1 took either as room, and copied past the ring: IndexOutOfBoundsException on the IO thread).
            MemorySegment src = arena.allocate(64);
            assertEquals(-1, ring.write(src.address(), 64, 5), "consumed 10 > written 5");
            mem.set(ValueLayout.JAVA_LONG, 64, Long.MIN_VALUE);
            assertEquals(-1, ring.write(src.address(), 64, 5), "consumed far behind: more than a ring's worth unread");
        }
    }
}
