package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RemoteAccessException;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A peer process stopped (SIGSTOP) or killed (SIGKILL) while operations stream to it, on real
 * verbs: the peer ({@link FaultPeerMain}) is a server in a child JVM on rxe0, this JVM the client
 * on rxe1.
 *
 * <p>What each must do differs, and is what RDMA promises. A stopped process's memory is still
 * served by its NIC (here rxe in the kernel): one-sided operations go on completing, and sends
 * are taken while the receives it posted last; after that the sender gets RNR NAKs and, its
 * RNR retries spent, IBV_WC_RNR_RETRY_EXC_ERR. A killed process's QP is destroyed with it: every
 * operation in flight ends, once, within the retry budget and a second of the process's exit, and
 * the connection is over.
 */
@Tag("verbs")
class PeerStoppedOrKilledVerbsTest {
    private static final int RECEIVES = 8, WINDOW = 16;
    private static final List<String> REPORT = new CopyOnWriteArrayList<>();

    @AfterAll
    static void report() throws IOException {
        FaultReport.write("4-peer", "Case 4: peer stopped (SIGSTOP) and killed (SIGKILL) mid-stream", REPORT);
    }

    @Test
    void killedPeerEndsEveryOperationOnceWithinTheBudget() throws Exception {
        ConnectionConfig config = ConnectionConfig.builder().ackTimeout(16).retryCount(2).build();
        try (PeerProcess peer = PeerProcess.start(Transport.verbs(), VerbsTestAddresses.nextServerAddress(), RECEIVES);
             Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.clientDevice()).build()) {
            Connection c = rdma.connect(peer.address(), config);
            QueuePairInfo qp = c.queuePair();
            Duration budget = qp.ackTimeoutDuration().multipliedBy(qp.retryCount() + 1L);
            LocalRegion local = rdma.allocate(WINDOW * 4096L);
            int max = 200_000;
            Outcomes out = new Outcomes(max, WINDOW);
            int posted = 0;
            long killedAt = 0;
            CompletableFuture<Long> exitedAt = null;
            // A stream of reads, writes and adds, 16 in flight; the peer is killed once 200 have ended.
            while (posted < max) {
                if (!out.window.tryAcquire(60, TimeUnit.SECONDS)) {
                    fail("no operation ended for 60 s; " + out.ended.getCount() + " outstanding of " + posted);
                }
                if (killedAt == 0 && out.succeeded.get() >= 200) {
                    killedAt = System.nanoTime();
                    peer.process().destroyForcibly();   // SIGKILL
                    exitedAt = peer.process().onExit().thenApply(p -> System.nanoTime());
                }
                if (c.state() != ConnectionState.ESTABLISHED) {
                    out.window.release();
                    break;
                }
                int i = posted++;
                LocalRegion chunk = local.slice((i % WINDOW) * 4096L, 4096);
                try {
                    switch (i % 3) {
                        case 0 -> c.read(peer.region().slice((i % 16) * 4096L, 4096), chunk, i, out.<Void>handler());
                        case 1 -> c.write(chunk, peer.region().slice((i % 16) * 4096L, 4096), i, out.<Void>handler());
                        default -> c.fetchAndAdd(peer.region().slice(8L * (i % 8), 8), 1, i, out.<Long>handler());
                    }
                } catch (ConnectionClosedException e) {   // the connection ended between the check and the post
                    posted--;
                    out.window.release();
                    break;
                }
            }
            assertTrue(killedAt != 0, "the peer was never killed: " + out.succeeded.get() + " operations succeeded");
            for (int i = posted; i < max; i++) {
                out.ended.countDown();   // never posted
            }
            long limit = budget.plusSeconds(1).toNanos();
            assertTrue(out.ended.await(limit + TimeUnit.SECONDS.toNanos(60), TimeUnit.NANOSECONDS),
                    out.ended.getCount() + " operations never ended after the peer was killed");
            long took = out.lastEndNanos - killedAt;
            long exited = exitedAt.get(60, TimeUnit.SECONDS) - killedAt;
            long firstFailure = out.firstFailureNanos.get() - killedAt;
            String timeline = "the process exited " + exited / 1_000_000 + " ms after SIGKILL, the first operation failed "
                    + firstFailure / 1_000_000 + " ms after it, the last ended " + took / 1_000_000 + " ms after it";
            System.out.println("killed peer: " + timeline);
            out.expectEachEndedOnce(posted);
            // The budget runs from the process's end, not from the signal: the kernel destroys its QP and
            // rdma_cm id while the process exits, and how long a JVM takes to exit is the (emulated,
            // shared) machine's, not ours. Its end is seen here a little after it happens, never before.
            long afterExit = took - Math.max(0, exited);
            assertTrue(afterExit <= limit, "operations ended " + afterExit / 1_000_000 + " ms after the killed peer's "
                    + "process exited; the budget is " + budget.toMillis() + " ms (+1 s); " + timeline);
            assertTrue(!out.failures.isEmpty(), "nothing failed after the kill");
            for (Throwable e : out.failures) {
                // The connection's end (ConnectionClosedException), or the dead process's registrations
                // torn down before its QP, which then refuses their keys (as RdmaServingConformance saw).
                if (!(e instanceof RemoteAccessException r && r.status().equals("IBV_WC_REM_ACCESS_ERR"))) {
                    assertInstanceOf(ConnectionClosedException.class, e, "a failure after the kill: " + e);
                }
            }
            assertNotEquals(ConnectionState.ESTABLISHED, c.state());
            ExecutionException later = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> c.read(peer.region().slice(0, 64), local.slice(0, 64)).get(60, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionClosedException.class, later.getCause());
            REPORT.add("- killed peer: " + posted + " operations posted, each ended once; " + out.failures.size()
                    + " failed; " + timeline + " (budget " + budget.toMillis()
                    + " ms + 1 s from the exit); the first failure: `" + out.failures.peek() + "`");
        }
    }

    @Test
    void stoppedPeerStillServesOneSidedOperationsAndItsSendsRunOutOfReceives() throws Exception {
        // 0.64 ms a try (the peer's RNR delay), one retry: sends past its posted receives fail fast.
        ConnectionConfig config = ConnectionConfig.builder().rnrRetry(1).build();
        try (PeerProcess peer = PeerProcess.start(Transport.verbs(), VerbsTestAddresses.nextServerAddress(), RECEIVES);
             Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.clientDevice()).build()) {
            Connection c = rdma.connect(peer.address(), config);
            LocalRegion local = rdma.allocate(FaultPeerMain.REGION);
            peer.signal("STOP");

            // One-sided: the stopped process's memory is read, written and added to by its NIC.
            c.readSync(peer.region(), local);
            for (long p = 0; p < FaultPeerMain.REGION; p++) {
                if (local.segment().get(ValueLayout.JAVA_BYTE, p) != FaultPeerMain.expected(p)) {
                    fail("byte " + p + " of the stopped peer's region read wrong");
                }
            }
            local.segment().fill((byte) 0x5a);
            c.writeSync(local.slice(0, 4096), peer.region().slice(4096, 4096));
            c.readSync(peer.region().slice(4096, 4096), local.slice(8192, 4096));
            assertEquals(-1L, local.segment().asSlice(0, 4096).mismatch(local.segment().asSlice(8192, 4096)),
                    "what was written to the stopped peer reads back");
            long before = c.fetchAndAddSync(peer.region().slice(0, 8), 3);
            assertEquals(before + 3, c.fetchAndAddSync(peer.region().slice(0, 8), 0));

            // Two-sided: as many sends as it posted receives are taken; the next runs out of RNR retries.
            int n = RECEIVES + 4;
            Outcomes out = new Outcomes(n, n);
            for (int i = 0; i < n; i++) {
                c.send(local.slice(0, 64), i, out.<Void>handler());
            }
            assertTrue(out.ended.await(120, TimeUnit.SECONDS), out.ended.getCount() + " sends never ended");
            out.expectEachEndedOnce(n);
            assertEquals(RECEIVES, out.succeeded.get(), "sends taken by the stopped peer's posted receives");
            assertTrue(out.failures.stream().anyMatch(e -> String.valueOf(e.getMessage()).contains("IBV_WC_RNR_RETRY_EXC_ERR")),
                    "no send names the spent RNR retries: " + out.failures);
            REPORT.add("- stopped peer: reads, writes and adds served by its device; " + out.succeeded.get()
                    + " sends taken (its posted receives), then `" + out.failures.peek() + "`");
            assertEquals(ConnectionState.ERROR, c.state());
        }
    }
}
