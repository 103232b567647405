package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The fault tests' workload on the software providers, over a link that does not fail: every
 * check it makes holds (so that on verbs a failure is the link's doing, not the checker's), two
 * rounds on one connection each write fresh bytes, and eight workloads sharing one server and
 * one client (the form the 64-connection fault test uses) run at once without crossing.
 */
class CheckedWorkloadTest {
    private static void twoRounds(Transport t) throws Exception {
        try (CheckedWorkload w = CheckedWorkload.open(t, ConnectionConfig.defaults())) {
            assertEquals(CheckedWorkload.OPERATIONS, w.run(1, Duration.ofMinutes(2)).operations());
            assertEquals(CheckedWorkload.OPERATIONS, w.run(2, Duration.ofMinutes(2)).operations());
            assertEquals(ConnectionState.ESTABLISHED, w.connection().state());
        }
    }

    private static void eightAtOnce(Transport t) throws Exception {
        try (Rdma server = t.server().build(); Rdma client = t.client().build();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<CheckedWorkload> ws = new ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) {
                    ws.add(new CheckedWorkload(server, client, t.nextServerAddress(), ConnectionConfig.defaults(),
                            CheckedWorkload.WINDOW));
                }
                List<CompletableFuture<CheckedWorkload.Result>> runs = new ArrayList<>();
                for (int i = 0; i < ws.size(); i++) {
                    CheckedWorkload w = ws.get(i);
                    int seed = 10 + i;
                    runs.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            return w.run(seed, Duration.ofMinutes(2));
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    }, threads));
                }
                for (CompletableFuture<CheckedWorkload.Result> r : runs) {
                    assertEquals(CheckedWorkload.OPERATIONS, r.get(3, TimeUnit.MINUTES).operations());
                }
            } finally {
                for (CheckedWorkload w : ws) {
                    w.close();
                }
            }
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

    @Test
    void eightAtOnceOnTcp() throws Exception {
        eightAtOnce(Transport.tcp());
    }

    @Test
    void eightAtOnceOnShm() throws Exception {
        eightAtOnce(Transport.shm());
    }
}
