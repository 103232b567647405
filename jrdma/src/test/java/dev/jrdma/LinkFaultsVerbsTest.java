package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Real verbs on an imperfect link: netem ({@link Netem}) drops, reorders, duplicates and delays
 * rxe's packets between rxe1 and rxe0 while {@link CheckedWorkload} moves checked data with
 * writes, reads, sends and atomics. Every operation must complete exactly once with the right
 * data, and rxe's counters must show that the faults happened and were repaired (retransmissions,
 * sequence NAKs, dropped duplicates), not that the link was clean after all.
 *
 * <p>The connection is made on a clean link and the faults go on after: rdma_cm's own exchange
 * over a lossy link is the CM's retry business, not the data path's. The ack timeout is 14
 * (67 ms, perftest's), so a lost packet at the tail of a burst costs 67 ms, not rdma_cm's
 * default of seconds; the retry budget is the largest, 7.
 *
 * <p>The report (operations per second against the clean link, and the counters) is a
 * {@link FaultReport} section.
 */
@Tag("verbs")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)   // the report's rows in the order
class LinkFaultsVerbsTest {
    static final ConnectionConfig CONFIG = ConnectionConfig.builder().ackTimeout(14).retryCount(7).build();
    private static final Duration BOUND = Duration.ofMinutes(4);
    private static final List<String> DEVICES = List.of(VerbsTestAddresses.serverDevice(), VerbsTestAddresses.clientDevice());
    private static final List<String> REPORT = new ArrayList<>();
    private static int seed;

    @BeforeAll
    static void cleanLinkFirst() throws Exception {
        Netem.clear();
        REPORT.add("| link (netem on both veth ends) | ops/s | vs its clean run | completer_retry_err | rcvd_seq_err "
                + "| out_of_seq_request | duplicate_request | retry_exceeded_err |");
        REPORT.add("|---|---:|---:|---:|---:|---:|---:|---:|");
        // Under the VM's emulated CPU the first runs are the JIT's: they would make every later row look fast.
        for (int i = 0; i < 3; i++) {
            try (CheckedWorkload w = CheckedWorkload.open(Transport.verbs(), CONFIG)) {
                w.run(++seed, BOUND);
            }
        }
        measure("clean");
    }

    @AfterEach
    void linkClean() throws Exception {
        Netem.clear();
    }

    @AfterAll
    static void report() throws Exception {
        FaultReport.write("1-netem", "Cases 1, 2, 3 and 6: netem on the veth pair (" + CheckedWorkload.OPERATIONS
                + " checked operations a run, " + CheckedWorkload.WINDOW + " in flight; counters are rxe's, both ends)", REPORT);
    }

    /** A run's operations per second, its clean run's, and rxe's counters meanwhile. */
    private record Measured(double opsPerSecond, double cleanOpsPerSecond, RxeCounters counters) {
    }

    /**
     * One checked run under {@code netem}, right after one on the clean link (paired: the JIT and
     * the emulated CPU drift over a suite, so each row is compared with its own clean run).
     */
    private static Measured measure(String label, String... netem) throws Exception {
        try (CheckedWorkload w = CheckedWorkload.open(Transport.verbs(), CONFIG)) {
            double clean = w.run(++seed, BOUND).opsPerSecond();
            if (netem.length == 0) {
                REPORT.add(String.format(Locale.ROOT, "| %s | %.0f | 1.00 | - | - | - | - | - |", label, clean));
                return new Measured(clean, clean, null);
            }
            RxeCounters before = RxeCounters.read(DEVICES);
            Netem.apply(netem);
            CheckedWorkload.Result r;
            try {
                r = w.run(++seed, BOUND);
            } finally {
                Netem.clear();
            }
            RxeCounters d = RxeCounters.read(DEVICES).since(before);
            REPORT.add(String.format(Locale.ROOT, "| %s | %.0f | %.2f | %d | %d | %d | %d | %d |", label, r.opsPerSecond(),
                    r.opsPerSecond() / clean, d.get("completer_retry_err"), d.get("rcvd_seq_err"),
                    d.get("out_of_seq_request"), d.get("duplicate_request"), d.get("retry_exceeded_err")));
            assertEquals(0, d.get("retry_exceeded_err"), "no QP may run out of retries on " + label);
            return new Measured(r.opsPerSecond(), clean, d);
        }
    }

    /** Repairs that prove packets were lost: a request sent again after the timer or after a sequence NAK. */
    private static long retransmissions(RxeCounters d) {
        return d.get("completer_retry_err") + d.get("rcvd_seq_err");
    }

    @Test
    @Order(1)
    void loss1Percent() throws Exception {
        RxeCounters d = measure("loss 1%", "loss", "1%").counters;
        assertTrue(retransmissions(d) > 0, "1% loss caused no retransmission: was netem applied? " + d.values());
    }

    @Test
    @Order(2)
    void loss5Percent() throws Exception {
        RxeCounters d = measure("loss 5%", "loss", "5%").counters;
        assertTrue(retransmissions(d) > 0, "5% loss caused no retransmission: " + d.values());
    }

    @Test
    @Order(3)
    void reorder10Percent() throws Exception {
        // netem reorders by sending 10% at once and delaying the rest: later packets overtake.
        RxeCounters d = measure("reorder 10% (others 2 ms late)", "delay", "2ms", "reorder", "10%").counters;
        assertTrue(d.get("out_of_seq_request") > 0, "reordering reached no responder out of sequence: " + d.values());
    }

    @Test
    @Order(4)
    void duplicate1Percent() throws Exception {
        RxeCounters d = measure("duplicate 1%", "duplicate", "1%").counters;
        assertTrue(d.get("duplicate_request") > 0, "1% duplication reached no responder twice: " + d.values());
    }

    @Test
    @Order(5)
    void delay5msJitter2ms() throws Exception {
        Measured m = measure("delay 5 ms ± 2 ms", "delay", "5ms", "2ms");
        // Each compare-and-swap of the chain waits a round trip, at least 2 x 3 ms here.
        assertTrue(m.opsPerSecond < m.cleanOpsPerSecond, "a 5 ms delay did not slow the workload: " + m.opsPerSecond
                + " ops/s against " + m.cleanOpsPerSecond + " clean");
    }

    /**
     * The link goes dark (netem drops everything) for less than the retry budget, with the
     * workload in flight: rxe sends again until the link is back, and every operation completes
     * once with the right data.
     */
    @Test
    @Order(6)
    void outageShorterThanTheRetryBudgetIsRidden() throws Exception {
        // 268 ms a try, 7 retries: about 2.1 s of budget; the outage is a third of it.
        ConnectionConfig config = ConnectionConfig.builder().ackTimeout(16).retryCount(7).build();
        try (CheckedWorkload w = CheckedWorkload.open(Transport.verbs(), config)) {
            RxeCounters before = RxeCounters.read(DEVICES);
            Netem.apply("loss", "100%");
            CompletableFuture<CheckedWorkload.Result> run = CompletableFuture.supplyAsync(() -> {
                try {
                    return w.run(++seed, BOUND);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            try {
                Thread.sleep(700);   // the outage itself: its length is what this case is about
            } finally {
                Netem.clear();
            }
            run.get(BOUND.toSeconds() + 30, TimeUnit.SECONDS);   // throws the workload's AssertionError, if any
            RxeCounters d = RxeCounters.read(DEVICES).since(before);
            REPORT.add(String.format(Locale.ROOT, "| dark for 0.7 s (budget 2.1 s) | - | - | %d | %d | %d | %d | %d |",
                    d.get("completer_retry_err"), d.get("rcvd_seq_err"), d.get("out_of_seq_request"),
                    d.get("duplicate_request"), d.get("retry_exceeded_err")));
            assertTrue(d.get("completer_retry_err") > 0, "the outage caused no retransmission: " + d.values());
            assertEquals(0, d.get("retry_exceeded_err"), "a QP ran out of retries in an outage shorter than its budget");
            assertEquals(ConnectionState.ESTABLISHED, w.connection().state());
        }
    }

    /**
     * The link stays dark past the retry budget: every operation in flight fails, once, within the
     * budget and a second; the first names the exhausted retries; the connection is in ERROR and
     * refuses what comes after.
     */
    @Test
    @Order(7)
    void outageLongerThanTheRetryBudgetFailsEveryOperationInTime() throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().ackTimeout(16).retryCount(2).build();
        try (CheckedWorkload w = CheckedWorkload.open(Transport.verbs(), config)) {
            Connection c = w.connection();
            QueuePairInfo qp = c.queuePair();
            // Each try waits the ack timeout the device applied; retryCount retries after the first.
            Duration budget = qp.ackTimeoutDuration().multipliedBy(qp.retryCount() + 1L);
            int n = 12;
            Outcomes out = new Outcomes(n, n);
            Netem.apply("loss", "100%");
            long began = System.nanoTime();
            RemoteRegion r = w.remote();
            LocalRegion l = w.local();
            for (int i = 0; i < n; i++) {
                LocalRegion chunk = l.slice(i * 64L, 64);
                switch (i % 4) {
                    case 0 -> c.write(chunk, r.slice(i * 64L, 64), i, out.<Void>handler());
                    case 1 -> c.read(r.slice(i * 64L, 64), chunk, i, out.<Void>handler());
                    case 2 -> c.send(chunk, i, out.<Void>handler());
                    default -> c.fetchAndAdd(r.slice(8L * i, 8), 1, i, out.<Long>handler());
                }
            }
            long limit = budget.plusSeconds(1).toNanos();
            boolean all = out.ended.await(limit + TimeUnit.SECONDS.toNanos(60), TimeUnit.NANOSECONDS);
            long took = System.nanoTime() - began;
            assertTrue(all, out.ended.getCount() + " of " + n + " operations never ended after the link went dark for good");
            assertTrue(took <= limit, "the operations took " + took / 1_000_000 + " ms to fail; the budget is "
                    + budget.toMillis() + " ms (+1 s)");
            out.expectEachEndedOnce(n);
            assertEquals(0, out.succeeded.get(), "operations succeeded through a dark link");
            assertTrue(out.failures.stream().anyMatch(e -> String.valueOf(e.getMessage()).contains("IBV_WC_RETRY_EXC_ERR")),
                    "no failure names the exhausted retries: " + out.failures.stream().limit(3).toList());
            assertEquals(ConnectionState.ERROR, c.state());
            Exception refused = assertThrows(Exception.class, () -> c.write(l.slice(0, 8), r.slice(0, 8)).join());
            assertInstanceOf(ConnectionClosedException.class, refused.getCause() != null ? refused.getCause() : refused);
            REPORT.add(String.format(Locale.ROOT, "| dark for good (budget %d ms) | - | - | - | - | - | - | all %d failed in %d ms |",
                    budget.toMillis(), n, took / 1_000_000));
            System.out.println("after the budget: " + out.failures.peek() + "; a new write: " + refused);
        }
    }

    /**
     * In flight per connection when 64 run at once. With 16 each (1 024 operations, about 4 000
     * packets in flight) rxe's transmits overran the veth pair's receive backlog (1 000 packets) in
     * the VM: thousands of rxe send errors, 1.7 million packets sent for 57 000 received, a kernel
     * warning from rxe's send path, and a QP in error. That is the emulated test bed's limit, not
     * what this case is about.
     */
    private static final int MANY_WINDOW = 2;

    /**
     * 64 connections between one client and one server, each running the checked workload at
     * once, under 1 % loss: every one must check out; the report shows how evenly the link was
     * shared (operations per second per connection: slowest, median, fastest).
     */
    @Test
    @Order(8)
    void sixtyFourConnectionsUnderLossAllCheckOut() throws Exception {
        int n = 64;
        List<CheckedWorkload> workloads = new ArrayList<>();
        try (Rdma server = Transport.verbs().server().build(); Rdma client = Transport.verbs().client().build()) {
            try {
                for (int i = 0; i < n; i++) {
                    workloads.add(new CheckedWorkload(server, client, VerbsTestAddresses.nextServerAddress(), CONFIG,
                            MANY_WINDOW));
                }
                RxeCounters before = RxeCounters.read(DEVICES);
                Netem.apply("loss", "1%");
                List<CompletableFuture<CheckedWorkload.Result>> runs = new ArrayList<>();
                try (var threads = java.util.concurrent.Executors.newFixedThreadPool(n)) {
                    int first = seed;
                    for (int i = 0; i < n; i++) {
                        CheckedWorkload w = workloads.get(i);
                        int s = first + 1 + i;
                        runs.add(CompletableFuture.supplyAsync(() -> {
                            try {
                                return w.run(s, BOUND);
                            } catch (InterruptedException e) {
                                throw new IllegalStateException(e);
                            }
                        }, threads));
                    }
                    seed += n;
                    CompletableFuture.allOf(runs.toArray(CompletableFuture[]::new))
                            .get(BOUND.toSeconds() + 60, TimeUnit.SECONDS);   // throws the first workload's failure
                } finally {
                    Netem.clear();
                }
                RxeCounters d = RxeCounters.read(DEVICES).since(before);
                double[] rates = runs.stream().mapToDouble(r -> r.join().opsPerSecond()).sorted().toArray();
                double total = 0;
                for (CompletableFuture<CheckedWorkload.Result> r : runs) {
                    total += r.join().operations();
                }
                REPORT.add(String.format(Locale.ROOT, "| loss 1%%, %d connections at once: per connection slowest %.0f, "
                                + "median %.0f, fastest %.0f | %.0f in all | - | %d | %d | %d | %d | %d |", n, rates[0],
                        rates[n / 2], rates[n - 1], total / runs.stream().mapToDouble(r -> r.join().seconds()).max().orElseThrow(),
                        d.get("completer_retry_err"), d.get("rcvd_seq_err"), d.get("out_of_seq_request"),
                        d.get("duplicate_request"), d.get("retry_exceeded_err")));
                assertTrue(retransmissions(d) > 0, "1% loss over 64 connections caused no retransmission: " + d.values());
                assertEquals(0, d.get("retry_exceeded_err"), "a QP ran out of retries");
            } finally {
                for (CheckedWorkload w : workloads) {
                    w.close();
                }
            }
        }
    }
}
