package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/**
 * The fault tests' workload on the software providers, over a link that does not fail: every
 * check it makes holds (so that on verbs a failure is the link's doing, not the checker's), and
 * two rounds on one connection each write fresh bytes.
 */
class CheckedWorkloadTest {
    private static void twoRounds(Transport t) throws Exception {
        try (CheckedWorkload w = new CheckedWorkload(t, ConnectionConfig.defaults())) {
            assertEquals(CheckedWorkload.OPERATIONS, w.run(1, Duration.ofMinutes(2)).operations());
            assertEquals(CheckedWorkload.OPERATIONS, w.run(2, Duration.ofMinutes(2)).operations());
            assertEquals(ConnectionState.ESTABLISHED, w.connection().state());
        }
    }

    @Test
    void holdsOnTcp() throws Exception {
        twoRounds(Transport.tcp());
    }

    @Test
    void holdsOnShm() throws Exception {
        twoRounds(Transport.shm());
    }
}
