package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** jrdma perf's warm-up: a counted one runs in rounds as long as the settled one's. */
class WarmUpTest {
    @Test
    void aCountedWarmUpRunsInRoundsOfTheRoundSize() {
        List<Integer> rounds = new ArrayList<>();
        WarmUp w = WarmUp.counted(5000, 2000, n -> {
            rounds.add(n);
            return 1.0;
        });
        assertEquals(List.of(2000, 2000, 1000), rounds, "each round a run of its own, as the timed one is");
        assertTrue(w.counted());
        assertEquals(5000, w.iterations());

        rounds.clear();
        WarmUp.counted(0, 2000, n -> {
            rounds.add(n);
            return 1.0;
        });
        assertEquals(List.of(), rounds, "--warmup 0: none");
    }
}
