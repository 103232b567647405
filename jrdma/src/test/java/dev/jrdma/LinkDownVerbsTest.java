package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Case 3 of the fault suite with a real link outage: the client's netdev is set down (what a
 * pulled cable does) under a stream of writes, reads, sends and fetch-and-adds, on a Soft-RoCE
 * pair of the test's own ({@link PrivateRxePair}), and stays down past the retry budget. Every
 * operation posted must end exactly once, those in flight at the outage within the budget and a
 * second, none with wrong data; the connection must be in ERROR and refuse what comes after; the
 * port-down and port-up events of both devices must reach their device-event listeners; and once
 * the link is up again a new connection must move data.
 *
 * <p>The scenario runs in a child JVM ({@link #main}, plain Java) that prints what it saw as
 * {@code key value} lines; this test checks them. The child is needed because librdmacm keeps a
 * device open until its process ends, and the private devices are deleted afterwards.
 */
@Tag("verbs")
class LinkDownVerbsTest {
    /** Operations at most, and in flight at once. */
    private static final int MAX = 4096, WINDOW = 16, SLOT = 64;
    /** Operations that must have succeeded before the link goes down. */
    private static final int BEFORE = 200;
    private static final Pattern STATUS = Pattern.compile("IBV_WC_[A-Z_]+");

    @Test
    void aLinkDownPastTheRetryBudgetFailsEveryOperationOnceAndTheEventsArrive() throws Exception {
        File out = File.createTempFile("linkdown", ".log");
        try {
            PrivateRxePair.create();
            Process child = VerbsTestAddresses.runChildJvm(LinkDownVerbsTest.class, out, 600);
            String log = Files.readString(out.toPath());
            System.out.println(log);
            Map<String, String> facts = new LinkedHashMap<>();
            List<String> events = new ArrayList<>();
            for (String line : log.split("\n")) {
                int sp = line.indexOf(' ');
                if (line.startsWith("event ")) {
                    events.add(line.substring(6).strip());
                } else if (line.startsWith("fact ") && sp > 0) {
                    String kv = line.substring(5);
                    int s = kv.indexOf(' ');
                    facts.put(s < 0 ? kv : kv.substring(0, s), s < 0 ? "" : kv.substring(s + 1).strip());
                }
            }
            List<String> rows = new ArrayList<>(List.of("| what the child saw | |", "|---|---|"));
            facts.forEach((k, v) -> rows.add("| " + k + " | " + v.replace("|", "\\|") + " |"));
            rows.add("| device events, in order | " + String.join(", ", events) + " |");
            FaultReport.write("3-link-down", "Case 3 with a real outage: the client's netdev set down past the retry "
                    + "budget (a private rxe pair, " + WINDOW + " operations in flight)", rows);
            assertEquals(0, child.exitValue(), "the child failed:\n" + log);
            long posted = Long.parseLong(facts.get("posted"));
            assertTrue(posted > BEFORE, "only " + posted + " operations were posted");
            assertEquals("0", facts.get("ended-twice"), "operations ended more than once:\n" + log);
            assertEquals("0", facts.get("never-ended"), "operations never ended:\n" + log);
            assertEquals(String.valueOf(posted), facts.get("ended"));
            assertEquals("0", facts.get("data-errors"), "wrong data:\n" + log);
            assertTrue(Long.parseLong(facts.get("failed")) > 0, "nothing failed although the link was down:\n" + log);
            // rxe fails what it cannot send at once (IBV_WC_LOC_QP_OP_ERR: the route is gone with the link),
            // a NIC after its retries (IBV_WC_RETRY_EXC_ERR); what was queued behind is flushed. rxe on
            // Linux 6.1 can also stall (seen in CI: the whole window neither retried nor failed for a
            // minute): then jrdma puts the QP in error once it has heard of the port going down and
            // twice the budget (and 100 ms) has passed. Then two things are held: jrdma acted by
            // then, give or take the emulated CPU's scheduling (ACT_SLACK_MS: a CI run saw it act
            // 1.3 s late, while the VM's kernel was still busy with the link change, whose command
            // took 4.4 s), and from its act every operation ended within the budget and 1 s.
            String first = facts.get("first-failure");
            boolean stalledAndForced = first.equals("ConnectionClosedException")
                    && facts.get("first-failure-message").contains("stayed down past the retry budget");
            assertTrue(first.equals("IBV_WC_RETRY_EXC_ERR") || first.equals("IBV_WC_LOC_QP_OP_ERR") || stalledAndForced,
                    "the first failure is " + first + ", not the device's retry or send failure:\n" + log);
            long budget = Long.parseLong(facts.get("budget-ms")), last = Long.parseLong(facts.get("last-end-ms"));
            long from = 0;
            if (stalledAndForced) {
                long event = Math.max(0, Long.parseLong(facts.get("client-port-down-event-ms")));
                long acted = Long.parseLong(facts.get("first-failure-ms"));
                long due = event + 2 * budget + 100;
                assertTrue(acted <= due + ACT_SLACK_MS, "jrdma put the stalled QP in error " + acted + " ms after the link "
                        + "was down; due at " + due + " ms (the port-down event at " + event + " ms, twice the budget and 100 ms)");
                from = acted;
            }
            assertTrue(last <= from + budget + 1000, "the last operation ended " + last + " ms after the link was down; the budget is "
                    + budget + " ms (+1 s)" + (stalledAndForced ? ", counted from when jrdma put the stalled QP in error: " + from + " ms" : ""));
            assertEquals("ERROR", facts.get("state"));
            assertEquals("ConnectionClosedException", facts.get("after-error"), "an operation after the failure");
            for (String side : List.of("server", "client")) {
                int down = events.indexOf(side + " IBV_EVENT_PORT_ERR"), up = events.indexOf(side + " IBV_EVENT_PORT_ACTIVE");
                assertTrue(down >= 0 && up > down, "the " + side + "'s port events, down then up, are not among " + events);
            }
            assertEquals("ok", facts.get("connect-after-up"), "a new connection after the link came back:\n" + log);
        } finally {
            out.delete();
            PrivateRxePair.delete();
        }
    }

    /** How late jrdma may put a stalled QP in error on the VM's emulated CPU, past when it is due. */
    private static final long ACT_SLACK_MS = 3_000;

    /** The child: the scenario on the private pair, its facts printed as "fact KEY VALUE" and "event ..." lines. */
    public static void main(String[] args) throws Exception {
        LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        AtomicLong clientPortDownAt = new AtomicLong();
        ConnectionConfig config = ConnectionConfig.builder().ackTimeout(16).retryCount(2).timeout(Duration.ofSeconds(30)).build();
        try (Rdma server = Rdma.builder().provider("verbs").device(PrivateRxePair.DEV0)
                .onDeviceEvent(e -> events.add("server " + e.type())).build();
             Rdma client = Rdma.builder().provider("verbs").device(PrivateRxePair.DEV1)
                .onDeviceEvent(e -> {
                    if (e.type().equals("IBV_EVENT_PORT_ERR")) {
                        clientPortDownAt.compareAndSet(0, System.nanoTime());
                    }
                    events.add("client " + e.type());
                }).build()) {
            // Server: a write area, a read area filled here, and the counter; sends checked as they arrive.
            LocalRegion exposed = server.allocate(2L * MAX * SLOT + 8);
            MemorySegment mem = exposed.segment();
            long readAt = (long) MAX * SLOT, counterAt = 2L * MAX * SLOT;
            for (int i = 0; i < MAX; i++) {
                fill(mem.asSlice(readAt + (long) i * SLOT, SLOT), 1, i);
            }
            Queue<String> dataErrors = new ConcurrentLinkedQueue<>();
            List<Integer> arrived = Collections.synchronizedList(new ArrayList<>());
            RdmaServer listener = server.listen(new InetSocketAddress(PrivateRxePair.IP0, 7471), config,
                    accepted -> accepted.onReceive((c, m) -> {
                        int seq = m.byteCount() == SLOT ? m.data().get(ValueLayout.JAVA_INT_UNALIGNED, 0) : -1;
                        if (seq < 0 || !same(m.data().asSlice(4, SLOT - 4), 2, seq, 4)) {
                            dataErrors.add("message #" + arrived.size() + " (" + m.byteCount() + " bytes, seq " + seq + ") is not what was sent");
                        }
                        arrived.add(seq);
                    }));
            Connection c = client.connect(listener.address(), config);
            QueuePairInfo qp = c.queuePair();
            long budgetMs = qp.ackTimeoutDuration().multipliedBy(qp.retryCount() + 1L).toMillis();
            fact("budget-ms", budgetMs);
            RemoteRegion remote = RemoteRegion.fromDescriptor(exposed.toRemote().toDescriptor());
            LocalRegion local = client.allocate((long) MAX * SLOT);

            // The stream: operation i of kind i % 4 on slot i, at most WINDOW in flight.
            AtomicIntegerArray calls = new AtomicIntegerArray(MAX);
            long[] endedAt = new long[MAX];
            Throwable[] failure = new Throwable[MAX];
            long[] value = new long[MAX];
            Semaphore window = new Semaphore(WINDOW);
            CountDownLatch before = new CountDownLatch(BEFORE);
            Object endings = new Object();
            AtomicLong ended = new AtomicLong(), downAt = new AtomicLong(Long.MAX_VALUE);
            CompletionHandler<Object, Integer> handler = new CompletionHandler<>() {
                @Override
                public void completed(Object v, Integer i) {
                    value[i] = v instanceof Long l ? l : 0;
                    end(i, null);
                    before.countDown();
                }

                @Override
                public void failed(Throwable e, Integer i) {
                    end(i, e);
                }

                private void end(int i, Throwable e) {
                    if (calls.incrementAndGet(i) == 1) {
                        failure[i] = e;
                        endedAt[i] = System.nanoTime();
                        window.release();
                        synchronized (endings) {
                            ended.incrementAndGet();
                            endings.notifyAll();
                        }
                    }
                }
            };
            int[] posted = {0}, afterDown = {0};
            Throwable[] refusedAtPost = {null};
            Thread poster = Thread.ofPlatform().name("poster").start(() -> {
                try {
                    for (int i = 0; i < MAX; i++) {
                        if (!window.tryAcquire(60, TimeUnit.SECONDS)) {
                            return;   // never-ended shows it
                        }
                        LocalRegion l = local.slice((long) i * SLOT, SLOT);
                        try {
                            switch (i % 4) {
                                case 0 -> {
                                    fill(l.segment(), 0, i);
                                    c.write(l, remote.slice((long) i * SLOT, SLOT), i, cast(handler));
                                }
                                case 1 -> c.read(remote.slice(readAt + (long) i * SLOT, SLOT), l, i, cast(handler));
                                case 2 -> {
                                    l.segment().set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
                                    fill(l.segment().asSlice(4), 2, i, 4);
                                    c.send(l, i, cast(handler));
                                }
                                default -> c.fetchAndAdd(remote.slice(counterAt, 8), 1, i, cast(handler));
                            }
                        } catch (RuntimeException e) {
                            refusedAtPost[0] = e;   // not posted: the connection refused it at once
                            return;
                        }
                        posted[0] = i + 1;
                        if (downAt.get() != Long.MAX_VALUE && ++afterDown[0] == WINDOW) {
                            return;   // a window's worth posted after the outage began: enough
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            if (!before.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("only " + (BEFORE - before.getCount()) + " operations succeeded in 120 s on a clean link");
            }
            // The clock starts when the command has returned: the link is down for sure then. (It went
            // down somewhere within the command, whose process takes seconds to start on the VM's
            // emulated CPU; what ends before the command returns counts as ending at once.)
            long spawned = System.nanoTime();
            Shell.run("ip", "link", "set", PrivateRxePair.NETDEV1, "down");
            long down = System.nanoTime();
            downAt.set(down);
            fact("ip-link-down-took-ms", (down - spawned) / 1_000_000);
            poster.join(TimeUnit.SECONDS.toMillis(120));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            synchronized (endings) {
                while (ended.get() < posted[0] && System.nanoTime() < deadline) {
                    endings.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                }
            }
            int n = posted[0];
            fact("posted", n);
            fact("refused-at-post", refusedAtPost[0] == null ? "none" : refusedAtPost[0].getClass().getSimpleName());
            int twice = 0, never = 0, failed = 0, succeeded = 0, faas = 0, faasOk = 0, sends = 0;
            long lastEnd = down, firstFailAt = Long.MAX_VALUE;
            String first = "none", firstMessage = "none";
            Map<String, Integer> kinds = new TreeMap<>();
            List<Integer> okSends = new ArrayList<>();
            Set<Long> faaValues = new HashSet<>();
            for (int i = 0; i < n; i++) {
                int k = calls.get(i);
                if (k == 0) {
                    never++;
                    continue;
                }
                twice += k > 1 ? 1 : 0;
                lastEnd = Math.max(lastEnd, endedAt[i]);
                faas += i % 4 == 3 ? 1 : 0;
                sends += i % 4 == 2 ? 1 : 0;
                if (failure[i] != null) {
                    failed++;
                    String kind = kindOf(failure[i]);
                    kinds.merge(kind, 1, Integer::sum);
                    if (endedAt[i] < firstFailAt) {
                        firstFailAt = endedAt[i];
                        first = kind;
                        firstMessage = String.valueOf(failure[i].getMessage()).replace('\n', ' ');
                    }
                    continue;
                }
                succeeded++;
                MemorySegment l = local.segment().asSlice((long) i * SLOT, SLOT);
                switch (i % 4) {
                    case 0 -> {
                        if (!same(mem.asSlice((long) i * SLOT, SLOT), 0, i, 0)) {
                            dataErrors.add("write " + i + " completed but the server does not hold its bytes");
                        }
                    }
                    case 1 -> {
                        if (!same(l, 1, i, 0)) {
                            dataErrors.add("read " + i + " completed with bytes that are not the server's");
                        }
                    }
                    case 2 -> okSends.add(i);
                    default -> {
                        faasOk++;
                        if (!faaValues.add(value[i])) {
                            dataErrors.add("two fetch-and-adds returned " + value[i]);
                        }
                    }
                }
            }
            // A failed send or add may still have reached the server (its ack was what got lost): the
            // server holds at least the successful ones and at most all posted, each once and in order.
            List<Integer> got = List.copyOf(arrived);
            for (int j = 1; j < got.size(); j++) {
                if (got.get(j) <= got.get(j - 1)) {
                    dataErrors.add("message " + got.get(j) + " arrived after " + got.get(j - 1));
                }
            }
            if (!got.containsAll(okSends)) {
                dataErrors.add("sends that completed did not arrive: " + okSends.stream().filter(s -> !got.contains(s)).limit(5).toList());
            }
            if (got.size() > sends) {
                dataErrors.add(got.size() + " messages arrived for " + sends + " sends");
            }
            long counter = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, counterAt);
            if (counter < faasOk || counter > faas) {
                dataErrors.add("the counter is " + counter + " after " + faasOk + " successful of " + faas + " fetch-and-adds");
            }
            if (faaValues.stream().anyMatch(v -> v >= counter)) {
                dataErrors.add("a fetch-and-add returned a value at or past the final counter " + counter);
            }
            fact("ended", n - never);
            fact("ended-twice", twice);
            fact("never-ended", never);
            fact("succeeded", succeeded);
            fact("failed", failed);
            fact("failed-by-kind", kinds);
            fact("first-failure", first);
            fact("first-failure-message", firstMessage);
            fact("first-failure-ms", firstFailAt == Long.MAX_VALUE ? "none" : (firstFailAt - down) / 1_000_000);
            fact("last-end-ms", (lastEnd - down) / 1_000_000);   // 0: everything had ended when the command returned
            // When the client's listener heard the port go down (negative: before the command returned; -1 s: never).
            fact("client-port-down-event-ms", clientPortDownAt.get() == 0 ? -1000 : (clientPortDownAt.get() - down) / 1_000_000);
            fact("messages-arrived", got.size() + " of " + sends + " sends, " + okSends.size() + " completed");
            fact("counter", counter + " (" + faasOk + " of " + faas + " fetch-and-adds completed)");
            fact("data-errors", dataErrors.size());
            dataErrors.stream().limit(10).forEach(e -> System.out.println("data-error " + e));
            fact("state", c.state());
            try {
                c.write(local.slice(0, 8), remote.slice(0, 8)).get(30, TimeUnit.SECONDS);
                fact("after-error", "succeeded");
            } catch (ExecutionException e) {
                fact("after-error", e.getCause().getClass().getSimpleName());
            }

            // The port events: down on both ends (the peer's veth lost its carrier), then up again.
            awaitEvents(events, "server IBV_EVENT_PORT_ERR", "client IBV_EVENT_PORT_ERR");
            Shell.run("ip", "link", "set", PrivateRxePair.NETDEV1, "up");
            awaitEvents(events, "server IBV_EVENT_PORT_ACTIVE", "client IBV_EVENT_PORT_ACTIVE");
            String notUp = PrivateRxePair.awaitActive(60_000);
            fact("ports-after-up", notUp == null ? "ACTIVE" : notUp);
            fact("routes-after-up", PrivateRxePair.describeRoutes());
            // Reported, not asserted: whether a connection works on what the kernel left after the flap.
            fact("connect-before-routes-restored", connectAndMove(server, client,
                    config.toBuilder().timeout(Duration.ofSeconds(10)).build(), 7473));
            PrivateRxePair.routes();
            fact("connect-after-up", connectAndMove(server, client, config, 7472));
            c.close();
            listener.close();
        }
    }

    /** A new connection on the pair, and one checked write and read-back over it: "ok" or why not. */
    private static String connectAndMove(Rdma server, Rdma client, ConnectionConfig config, int port) {
        try (LocalRegion target = server.allocate(SLOT); LocalRegion l = client.allocate(2L * SLOT);
             RdmaServer s = server.listen(new InetSocketAddress(PrivateRxePair.IP0, port), config, a -> { });
             Connection c = client.connect(s.address(), config)) {
            RemoteRegion r = RemoteRegion.fromDescriptor(target.toRemote().toDescriptor());
            fill(l.segment().asSlice(0, SLOT), 3, 0);
            c.write(l.slice(0, SLOT), r).get(30, TimeUnit.SECONDS);
            c.read(r, l.slice(SLOT, SLOT)).get(30, TimeUnit.SECONDS);
            return same(l.segment().asSlice(SLOT, SLOT), 3, 0, 0) && same(target.segment(), 3, 0, 0) ? "ok" : "wrong data";
        } catch (Exception e) {
            return "failed: " + e;
        }
    }

    /** Prints every event until each of {@code expected} has been seen, 60 s at most. */
    private static void awaitEvents(LinkedBlockingQueue<String> events, String... expected) throws InterruptedException {
        Set<String> missing = new HashSet<>(List.of(expected));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!missing.isEmpty()) {
            String e = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (e == null) {
                System.out.println("event-missing " + missing);
                return;
            }
            System.out.println("event " + e);
            missing.remove(e);
        }
    }

    private static String kindOf(Throwable e) {
        Matcher m = STATUS.matcher(String.valueOf(e.getMessage()));
        return m.find() ? m.group() : e.getClass().getSimpleName();
    }

    @SuppressWarnings("unchecked")
    private static <V> CompletionHandler<V, Integer> cast(CompletionHandler<Object, Integer> h) {
        return (CompletionHandler<V, Integer>) (CompletionHandler<?, Integer>) h;
    }

    private static void fact(String key, Object value) {
        System.out.println("fact " + key + " " + value);
    }

    /** Bytes of operation {@code i} of stream {@code kind}, from offset {@code from} of its slot. */
    private static byte at(int kind, int i, long p) {
        return (byte) (i * 31 + kind * 7 + p);
    }

    private static void fill(MemorySegment s, int kind, int i) {
        fill(s, kind, i, 0);
    }

    private static void fill(MemorySegment s, int kind, int i, long from) {
        for (long p = 0; p < s.byteSize(); p++) {
            s.set(ValueLayout.JAVA_BYTE, p, at(kind, i, p + from));
        }
    }

    private static boolean same(MemorySegment s, int kind, int i, long from) {
        for (long p = 0; p < s.byteSize(); p++) {
            if (s.get(ValueLayout.JAVA_BYTE, p) != at(kind, i, p + from)) {
                return false;
            }
        }
        return true;
    }
}
