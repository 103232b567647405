package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A silent peer is detected, as on verbs: a request it does not answer within
 * {@code (retryCount + 1) x 4.096 us x 2^ackTimeout} fails with RETRY_EXC_ERR and the connection
 * goes to error; every outstanding operation completes once. (0.1: a peer stopped with SIGSTOP
 * left writes and reads pending after 20 s on an ESTABLISHED connection, its kernel still
 * acknowledging TCP.) And a peer that is alive but out of receives is not mistaken for a silent
 * one: RNR_WAIT keeps the timer from firing, and its SEND fails with RNR_RETRY_EXC_ERR.
 */
class SilentPeerTest {
    /** retryCount 2, ackTimeout 14: 3 x 67 ms. */
    private static final ConnectionConfig QUICK = ConnectionConfig.builder().retryCount(2).ackTimeout(14).build();
    private static final long BUDGET_MS = 3 * Math.round(4.096 * (1 << 14) / 1000);

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void aStoppedPeersOperationsAllFailWithinTheAnswerBudget(String provider) throws Exception {
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start(provider);
             Rdma rdma = Rdma.builder().provider(provider).build();
             Connection c = rdma.connect(target.address, QUICK);
             LocalRegion msg = rdma.allocate(64)) {
            c.sendSync(msg);   // the peer is alive: answered
            signal(target, "STOP");
            try {
                long t0 = System.nanoTime();
                List<CompletableFuture<Void>> sent = new ArrayList<>();
                AtomicInteger completions = new AtomicInteger();
                for (int i = 0; i < 3; i++) {   // the target has receives for them; it is stopped
                    CompletableFuture<Void> f = c.send(msg);
                    f.whenComplete((v, e) -> completions.incrementAndGet());
                    sent.add(f);
                }
                long latest = 0;
                for (CompletableFuture<Void> f : sent) {
                    try {
                        f.orTimeout(BUDGET_MS + 5_000, TimeUnit.MILLISECONDS).join();
                        throw new AssertionError("a SEND to a stopped peer succeeded");
                    } catch (CompletionException e) {
                        assertTrue(!(e.getCause() instanceof java.util.concurrent.TimeoutException),
                                "not failed within the budget + 5 s");
                    }
                    latest = Math.max(latest, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
                }
                assertTrue(latest <= BUDGET_MS + 1_000, "all failed after " + latest + " ms; budget " + BUDGET_MS
                        + " ms + 1 s");
                assertEquals(3, completions.get(), "each completed once");
                assertNotEquals(ConnectionState.ESTABLISHED, c.state());
            } finally {
                signal(target, "CONT");
            }
        }
    }

    /**
     * Issue 45, finding 3: a connection with nothing to do rests (its IO thread does not poll it)
     * until its socket is ready or something is posted. A post to a resting connection whose peer
     * then never answers must still meet its answer's deadline: the post wakes it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void aPeerStoppedWhileTheConnectionRestsIsFoundAtTheNextPost(String provider) throws Exception {
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start(provider);
             Rdma rdma = Rdma.builder().provider(provider).build();
             Connection c = rdma.connect(target.address, QUICK);
             LocalRegion msg = rdma.allocate(64)) {
            c.sendSync(msg);   // the peer is alive: answered
            RestingConnectionTest.awaitAtRest(1, "our connection, idle");
            signal(target, "STOP");
            try {
                CompletableFuture<Void> f = c.send(msg);
                CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                        () -> f.orTimeout(BUDGET_MS + 5_000, TimeUnit.MILLISECONDS).join());
                assertTrue(String.valueOf(e.getCause().getMessage()).contains("RETRY_EXC_ERR"), String.valueOf(e.getCause()));
                assertNotEquals(ConnectionState.ESTABLISHED, c.state());
            } finally {
                signal(target, "CONT");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(60)
    void aPeerOutOfReceivesIsNotTakenForASilentOne(String provider) throws Exception {
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start(provider);
             Rdma rdma = Rdma.builder().provider(provider).build();
             Connection c = rdma.connect(target.address, QUICK);
             LocalRegion msg = rdma.allocate(64)) {
            for (int i = 0; i < 4; i++) {
                c.sendSync(msg);   // the target's four receives: it takes no message
            }
            // The fifth waits for a receive for the target's RNR budget (700 ms, over twice our
            // answer budget), then is refused as RNR, not as a silent peer.
            CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                    () -> c.send(msg).orTimeout(10, TimeUnit.SECONDS).join());
            assertTrue(String.valueOf(e.getCause().getMessage()).contains("RNR_RETRY_EXC_ERR"), String.valueOf(e.getCause()));
        }
    }

    /** Sends {@code signal}; for STOP, returns once every thread of the target is stopped (kill returns before). */
    private static void signal(HostilePeerTest.Target target, String signal) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("kill", "-" + signal, String.valueOf(target.process.pid())).inheritIO().start();
        assertEquals(0, p.waitFor(), "kill -" + signal);
        if (signal.equals("STOP")) {
            Path tasks = Path.of("/proc/" + target.process.pid() + "/task");
            for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); ; ) {
                boolean all;
                try (Stream<Path> ts = Files.list(tasks)) {
                    all = ts.allMatch(SilentPeerTest::stopped);
                }
                if (all) {
                    return;
                }
                assertTrue(System.nanoTime() < end, "the target's threads did not all stop within 10 s");
                Thread.onSpinWait();
            }
        }
    }

    private static boolean stopped(Path task) {
        try {
            String stat = Files.readString(task.resolve("stat"));
            return stat.charAt(stat.lastIndexOf(')') + 2) == 'T';
        } catch (IOException e) {
            return true;   // a thread that ended meanwhile
        }
    }
}
