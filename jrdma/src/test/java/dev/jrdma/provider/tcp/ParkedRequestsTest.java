package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

/** {@link ParkedRequests} and {@link PayloadLanding} against a small {@link PayloadBudget}: memory drawn as bytes arrive. */
class ParkedRequestsTest {
    private static FrameHeader write(int length) {
        FrameHeader h = new FrameHeader();
        h.type = TcpFrameDescriptor.WRITE;
        h.length = length;
        return h;
    }

    @Test
    void aDeclaredPayloadCostsOnlyWhatArrivedAndEverythingGoesBack() {
        PayloadBudget budget = new PayloadBudget(64 << 10, 1_000);
        try (ParkedRequests parked = new ParkedRequests(budget)) {
            int declared = (int) (ParkedRequests.BUDGET - 1024);
            assertTrue(parked.fits(declared));
            assertTrue(parked.park(write(declared)));
            assertEquals(ParkedRequests.FRAME_COST, budget.inUse(), "a header costs its record, not what it declares");
            PayloadLanding landing = new PayloadLanding();
            landing.intoParked(parked, declared);
            MemorySegment bytes = Arena.ofAuto().allocate(3072);
            assertEquals(3072, landing.place(bytes.address(), 3072));
            assertEquals(ParkedRequests.FRAME_COST + ParkedRequests.FIRST_CHUNK, budget.inUse(),
                    "3 KiB arrived: one first chunk is drawn");
            // Chunks double: 4, 8, 16, 32 KiB (and the record's 128 bytes) fit the 64 KiB budget; the next 64 KiB does not.
            MemorySegment more = Arena.ofAuto().allocate(64 << 10);
            int taken = landing.place(more.address(), 64 << 10);
            assertEquals((4 + 8 + 16 + 32) * 1024 - 3072, taken, "past the budget nothing more is taken");
            assertEquals(ParkedRequests.FRAME_COST + (60 << 10), budget.inUse());
            assertEquals(0, landing.room(), "no room: the budget has less than the next chunk, 64 KiB");
            assertEquals(declared - (60 << 10), landing.left());
        }
        assertEquals(0, budget.inUse(), "closing gives back the filling request's record and chunks");
    }

    @Test
    void closingGivesBackEveryChunkAndRecord() {
        PayloadBudget budget = new PayloadBudget(1 << 20, 1_000);
        ParkedRequests parked = new ParkedRequests(budget);
        for (int i = 0; i < 3; i++) {
            assertTrue(parked.park(write(10_000)));
            PayloadLanding landing = new PayloadLanding();
            landing.intoParked(parked, 10_000);
            MemorySegment bytes = Arena.ofAuto().allocate(10_000);
            assertEquals(10_000, landing.place(bytes.address(), 10_000));
            parked.filled();
        }
        ParkedRequests.Parked first = parked.first();
        assertEquals(2, first.chunks(), "4 KiB, then the 5904 bytes left (less than the next 8 KiB)");
        assertEquals(4096, first.chunkLength(0));
        assertEquals(10_000 - 4096, first.chunkLength(1));
        parked.removeFirst();
        assertEquals(2 * (ParkedRequests.FRAME_COST + 10_000), budget.inUse());
        parked.close();
        assertEquals(0, budget.inUse(), "closing gives back what was still parked");
    }

    @Test
    void theRecordAloneMayNotExceedTheBudget() {
        PayloadBudget budget = new PayloadBudget(ParkedRequests.FRAME_COST, 1_000);
        ParkedRequests a = new ParkedRequests(budget);
        ParkedRequests b = new ParkedRequests(budget);
        assertTrue(a.park(write(0)));
        assertFalse(b.park(write(0)), "the process's budget is one record: another connection's is refused");
        a.close();
        assertTrue(b.park(write(0)));
        b.close();
        assertEquals(0, budget.inUse());
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertEquals(16L << 20, PayloadBudget.defaultBytes(64L << 20), "a small heap: the 16 MiB floor");
        assertEquals(128L << 20, PayloadBudget.defaultBytes(1L << 30), "an eighth of 1 GiB");
        assertEquals(256L << 20, PayloadBudget.defaultBytes(64L << 30), "a large heap: the 256 MiB ceiling");
        IllegalArgumentException tiny = assertThrows(IllegalArgumentException.class, () -> new PayloadBudget(10, 1_000));
        assertTrue(tiny.getMessage().contains("10 bytes"), tiny.getMessage());
        IllegalArgumentException never = assertThrows(IllegalArgumentException.class, () -> new PayloadBudget(1 << 20, 0));
        assertTrue(never.getMessage().contains("0 ms (-Djrdma.tcp.payloadStallMillis)"), never.getMessage());
        IllegalArgumentException words = assertThrows(IllegalArgumentException.class,
                () -> PayloadBudget.of("16m", null, 1L << 30));
        assertTrue(words.getMessage().contains("-Djrdma.tcp.parkedBudgetBytes=16m: not a whole number"), words.getMessage());
        PayloadBudget set = PayloadBudget.of(" 1048576 ", "250", 1L << 30);
        assertEquals(1 << 20, set.limit());
        assertEquals(250_000_000L, set.stallNanos());
        PayloadBudget defaults = PayloadBudget.of(null, null, 1L << 30);
        assertEquals(128L << 20, defaults.limit());
        assertEquals(5_000_000_000L, defaults.stallNanos());
    }
}
