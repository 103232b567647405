package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

import org.junit.jupiter.api.Test;

/** The leak check that every test of this module ends with can fail: a buffer dropped unreleased is named. */
class LeakRecorderTest {
    @Test
    void aBufferDroppedWithoutReleaseFailsTheCheckAndOneReleasedDoesNot() {
        LeakRecorder.assertNoLeak("the tests before");
        useAndRelease();
        LeakRecorder.assertNoLeak("a released buffer");

        dropUnreleased();
        AssertionError e = assertThrows(AssertionError.class, () -> LeakRecorder.assertNoLeak("a dropped buffer"));
        assertTrue(e.getMessage().contains("ByteBuf") && e.getMessage().contains("dropUnreleased"), e.getMessage());
    }

    /**
     * Its own frame, as {@link #dropUnreleased}'s: a wrapper left in a local of the test would keep
     * the pooled buffer object that the next allocation takes from the recycler reachable.
     */
    private static void useAndRelease() {
        ByteBuf released = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        released.writeLong(7);
        released.release();
    }

    /** Its own frame: once it returns nothing refers to the buffer. */
    private static void dropUnreleased() {
        ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        leaked.writeLong(42);
    }
}
