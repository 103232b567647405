package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** {@link LentReceives} against a HashMap: lends and give-backs in random order, the table kept at its room. */
class LentReceivesTest {
    @Test
    void agreesWithAMapThroughRandomLendsAndGiveBacks() {
        LentReceives<String> table = new LentReceives<>(64);
        Map<Long, String> expected = new HashMap<>();
        List<Long> out = new ArrayList<>();
        Random random = new Random(45);
        for (int step = 0; step < 200_000; step++) {
            if (out.isEmpty() || (out.size() < 64 && random.nextBoolean())) {
                long id = random.nextInt(1 << 20) | (random.nextBoolean() ? Long.MIN_VALUE : 0);
                if (expected.containsKey(id)) {
                    continue;
                }
                String holder = "qp" + (id & 7);
                assertTrue(table.lend(id, holder));
                expected.put(id, holder);
                out.add(id);
            } else {
                long id = out.remove(random.nextInt(out.size()));
                assertEquals(expected.remove(id), table.giveBack(id), "step " + step);
            }
            assertEquals(expected.size(), table.size());
        }
        for (long id : out) {
            assertEquals(expected.get(id), table.giveBack(id));
        }
        assertEquals(0, table.size());
    }

    @Test
    void aFullTableRecordsNoMoreAndAnUnknownIdHasNoHolder() {
        LentReceives<String> table = new LentReceives<>(4);
        int recorded = 0;
        while (table.lend(recorded, "x")) {
            recorded++;
        }
        assertEquals(4, recorded, "room for the 4 asked (in a table of 8 slots)");
        assertFalse(table.lend(99, "y"));
        assertNull(table.giveBack(99));
        table.clear();
        assertEquals(0, table.size());
        assertNull(table.giveBack(0));
    }
}
