package dev.jrdma.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * A line a peer can cause once per handshake is logged at most once every 10 s: a flood of
 * HELLOs costs the log one line, not one per HELLO.
 */
class LogTest {
    @Test
    void aFloodOfOneKindOfLineLogsOne() {
        int logged = 0;
        for (int i = 0; i < 10_000; i++) {
            if (Log.limited("test.flood", System.Logger.Level.DEBUG, "line " + i)) {
                logged++;
            }
        }
        assertEquals(1, logged, "10 000 in a burst (well within 10 s) make one line");
        assertEquals(true, Log.limited("test.other", System.Logger.Level.DEBUG, "another kind is counted apart"));
    }
}
