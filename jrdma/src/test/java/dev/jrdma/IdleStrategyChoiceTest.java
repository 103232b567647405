package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Rdma.Builder#idleStrategy}: each strategy's IO threads carry operations and messages
 * both ways, the sleeping ones woken by the completions themselves; bad counts and budgets, and a
 * strategy where no IO thread idles (INLINE, IO loops), are refused by name; and the IO threads
 * are gone after close.
 */
class IdleStrategyChoiceTest {
    private static final List<IdleStrategy> ALL = List.of(IdleStrategy.busySpin(), IdleStrategy.yielding(),
            IdleStrategy.sleeping(), IdleStrategy.spinThenSleep(Duration.ofNanos(20_000)), IdleStrategy.backoff(100, 10),
            IdleStrategy.backoff(0, 0));

    private static InetSocketAddress address(String provider) {
        return (provider.equals("tcp") ? Transport.tcp() : Transport.shm()).nextServerAddress();
    }

    private static Set<String> ioThreadNames() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName).filter(n -> n.startsWith("jrdma-io-"))
                .collect(Collectors.toSet());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void everyStrategyCarriesWritesReadsAndMessagesAndItsThreadsEndAtClose(String provider) throws Exception {
        Set<String> before = ioThreadNames();
        for (IdleStrategy strategy : ALL) {
            try (Rdma server = Rdma.builder().provider(provider).idleStrategy(strategy).build();
                 Rdma client = Rdma.builder().provider(provider).idleStrategy(strategy).build();
                 LocalRegion target = server.allocate(64);
                 LocalRegion buf = client.allocate(64)) {
                java.util.concurrent.LinkedBlockingQueue<Integer> received = new java.util.concurrent.LinkedBlockingQueue<>();
                try (RdmaServer l = server.listen(address(provider), c -> c.onReceive((conn, m) -> received.add(m.byteCount())));
                     Connection c = client.connect(l.address())) {
                    RemoteRegion remote = target.toRemote();
                    for (int round = 0; round < 50; round++) {   // each round waits on a completion the IO thread finds
                        buf.segment().set(ValueLayout.JAVA_LONG, 0, round);
                        c.write(buf.slice(0, 8), remote).get(10, TimeUnit.SECONDS);
                        buf.segment().set(ValueLayout.JAVA_LONG, 0, -1);
                        c.read(remote.slice(0, 8), buf.slice(8, 8)).get(10, TimeUnit.SECONDS);
                        assertEquals(round, buf.segment().get(ValueLayout.JAVA_LONG, 8), strategy + ": round " + round);
                        c.send(buf.slice(0, 16)).get(10, TimeUnit.SECONDS);
                        assertEquals(16, received.poll(10, TimeUnit.SECONDS), strategy + ": message " + round);
                    }
                }
            }
        }
        Set<String> after = ioThreadNames();
        after.removeAll(before);
        assertEquals(Set.of(), after, "IO threads left after close");
    }

    @Test
    void aStrategyWhereNoIoThreadIdlesIsRefusedByName() {
        IllegalArgumentException inline = assertThrows(IllegalArgumentException.class, () -> Rdma.builder().provider("tcp")
                .ioThreads(Rdma.INLINE).idleStrategy(IdleStrategy.yielding()).build());
        assertTrue(inline.getMessage().contains("idleStrategy(IdleStrategy.yielding())")
                && inline.getMessage().contains("INLINE"), inline.getMessage());
        IllegalArgumentException loops = assertThrows(IllegalArgumentException.class, () -> Rdma.builder().provider("tcp")
                .ioLoops(2).idleStrategy(IdleStrategy.backoff(1, 1)).build());
        assertTrue(loops.getMessage().contains("2 IO loops"), loops.getMessage());
        // Null is the completion mode's again, and INLINE then builds.
        try (Rdma r = Rdma.builder().provider("tcp").ioThreads(Rdma.INLINE).idleStrategy(IdleStrategy.busySpin())
                .idleStrategy(null).build()) {
            int passes = 0;
            while (r.poll() != 0 && passes < 100) {   // the start's tasks run in the first passes, then it is idle
                passes++;
            }
            assertTrue(passes < 100, "an INLINE Rdma with the strategy taken back polls to idle");
        }
    }

    @Test
    void theChosenStrategyIsWhatTheIoThreadsGetAndOnlyNeverSleepingOnesLeaveTheChannelsUnarmed() {
        var yielding = Rdma.builder().idleStrategy(IdleStrategy.yielding()).ioPlan();
        assertEquals(dev.jrdma.runtime.IdleWait.YIELD, yielding.idle());
        assertTrue(yielding.pollingOnly(), "a yielding thread never sleeps: nobody arms its channel");
        var backoff = Rdma.builder().completionMode(CompletionMode.POLLING).idleStrategy(IdleStrategy.backoff(7, 3)).ioPlan();
        assertEquals(dev.jrdma.runtime.IdleWait.backoff(7, 3), backoff.idle(), "the strategy wins over the mode");
        assertTrue(!backoff.pollingOnly(), "a backing-off thread sleeps: its channel is armed");
        var mode = Rdma.builder().completionMode(CompletionMode.EVENT).ioPlan();
        assertEquals(dev.jrdma.runtime.IdleWait.SLEEP, mode.idle(), "without a strategy, the mode's");
        assertEquals(dev.jrdma.runtime.IdleWait.SPIN_THEN_SLEEP, Rdma.builder().ioPlan().idle(), "the default: ADAPTIVE's");
    }

    @Test
    void badBudgetsAreRefusedByName() {
        IllegalArgumentException spins = assertThrows(IllegalArgumentException.class, () -> IdleStrategy.backoff(-1, 0));
        assertTrue(spins.getMessage().contains("-1 spins"), spins.getMessage());
        IllegalArgumentException yields = assertThrows(IllegalArgumentException.class, () -> IdleStrategy.backoff(0, -5));
        assertTrue(yields.getMessage().contains("-5 yields"), yields.getMessage());
        IllegalArgumentException spin = assertThrows(IllegalArgumentException.class,
                () -> IdleStrategy.spinThenSleep(Duration.ofNanos(-1)));
        assertTrue(spin.getMessage().contains("PT-0.000000001S"), spin.getMessage());
        assertThrows(NullPointerException.class, () -> IdleStrategy.spinThenSleep(null));
    }

    @Test
    void strategiesAreValuesThatSayWhatTheyAre() {
        assertEquals(IdleStrategy.backoff(3, 4), IdleStrategy.backoff(3, 4));
        assertEquals(IdleStrategy.backoff(3, 4).hashCode(), IdleStrategy.backoff(3, 4).hashCode());
        assertTrue(!IdleStrategy.backoff(3, 4).equals(IdleStrategy.backoff(4, 3)));
        assertEquals(IdleStrategy.spinThenSleep(Duration.ofNanos(50_000)), IdleStrategy.of(CompletionMode.ADAPTIVE));
        assertEquals(IdleStrategy.busySpin(), IdleStrategy.of(CompletionMode.POLLING));
        assertEquals(IdleStrategy.sleeping(), IdleStrategy.of(CompletionMode.EVENT));
        assertArrayEquals(new String[] {"IdleStrategy.backoff(3, 4)", "IdleStrategy.spinThenSleep(PT0.00002S)"},
                new String[] {IdleStrategy.backoff(3, 4).toString(), IdleStrategy.spinThenSleep(Duration.ofNanos(20_000)).toString()});
    }
}
