package dev.jrdma.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The variants of jrdma that {@code scripts/bench-vs-perftest --icount --variant} runs beside it in
 * the same boots (an A/B of a setting): how {@code -Djrdma.icount.variants} is read, and what it
 * refuses, by name, before a boot is spent on it.
 */
class IcountVariantsTest {
    @Test
    void readsLabelsAndTheirJvmOptionsInOrder() {
        Map<String, List<String>> v = IcountComparison.variants(
                "own CQs=-Djrdma.verbs.sharedCompletionQueues=false; two=-Da=1  -Xint ;");
        assertEquals(List.of("own CQs", "two"), List.copyOf(v.keySet()));
        assertEquals(List.of("-Djrdma.verbs.sharedCompletionQueues=false"), v.get("own CQs"));
        assertEquals(List.of("-Da=1", "-Xint"), v.get("two"));
        assertTrue(IcountComparison.variants("").isEmpty(), "none given: none run");
        assertTrue(IcountComparison.variants(" ; ").isEmpty());
    }

    @Test
    void refusesWhatWouldMakeAnUnreadableReport() {
        for (String bad : List.of("=-Da=1", "noOptions=", "noEquals", "jrdma=-Da=1", "perftest=-Da=1", "DiSNI=-Da=1",
                "a=-Da=1;a=-Db=2", "pipe|label=-Da=1", "a=notAnOption")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IcountComparison.variants(bad), bad);
            assertTrue(e.getMessage().contains(IcountComparison.VARIANTS_PROPERTY) && e.getMessage().contains(bad),
                    "names the property and the spec: " + e.getMessage());
        }
    }
}
