package dev.jrdma.engine.io;

import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.SharedCompletionSink;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The IO thread's table of members by queue pair number, and a member whose completion throws. */
class SharedCompletionsTest {

    /** A member that records what it was given. */
    private static final class Recording implements SharedCompletions.Member {
        final List<Long> wrIds = new ArrayList<>();
        final List<Throwable> failures = new ArrayList<>();
        boolean throwing;

        @Override
        public void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
            wrIds.add(wrId);
            if (throwing) {
                throw new IllegalStateException("completion " + wrId + " refused by the test");
            }
        }

        @Override
        public void failed(Throwable t) {
            failures.add(t);
        }
    }

    /** A CQ several queue pairs share: completions as {qpNum, wrId}. */
    private static final class SharedQueue implements CompletionQueue {
        final ArrayDeque<long[]> entries = new ArrayDeque<>();
        int arms;

        @Override
        public int poll(CompletionSink sink, int max) {
            throw new AssertionError("a shared queue is polled with pollShared");
        }

        @Override
        public int pollShared(SharedCompletionSink sink, int max) {
            int n = 0;
            long[] e;
            while (n < max && (e = entries.poll()) != null) {
                sink.onCompletion((int) e[0], e[1], 0, 0, 0, 0, false);
                n++;
            }
            return n;
        }

        @Override
        public void arm() {
            arms++;
        }

        @Override
        public void close() {
        }
    }

    private static Device deviceMaking(List<SharedQueue> made) {
        return (Device) Proxy.newProxyInstance(Device.class.getClassLoader(), new Class<?>[] {Device.class}, (p, m, args) -> {
            if (m.getName().equals("createCompletionQueue")) {
                SharedQueue q = new SharedQueue();
                made.add(q);
                return q;
            }
            if (m.getName().equals("name")) {
                return "test0";
            }
            throw new UnsupportedOperationException(m.getName());
        });
    }

    @Test
    void theTableAgreesWithAHashMapThroughRandomPutsAndRemovals() {
        SplittableRandom random = new SplittableRandom(46);
        SharedCompletions.MemberTable table = new SharedCompletions.MemberTable();
        Map<Integer, SharedCompletions.Member> reference = new HashMap<>();
        for (int step = 0; step < 200_000; step++) {
            // Keys from a small range collide and wrap round the table; 24-bit ones as real QP numbers.
            int key = step % 2 == 0 ? random.nextInt(64) : random.nextInt(1 << 24);
            int what = random.nextInt(3);
            if (what == 0) {
                SharedCompletions.Member m = new Recording();
                table.put(key, m);
                reference.put(key, m);
            } else if (what == 1) {
                table.remove(key);
                reference.remove(key);
            } else {
                assertSame(reference.get(key), table.get(key), "key " + key + " at step " + step);
            }
            if (step % 997 == 0) {
                assertEquals(reference.size(), table.size(), "size at step " + step);
                for (Map.Entry<Integer, SharedCompletions.Member> e : reference.entrySet()) {
                    assertSame(e.getValue(), table.get(e.getKey()), "key " + e.getKey() + " at step " + step);
                }
            }
        }
    }

    @Test
    void aMemberWhoseCompletionThrowsFailsAloneAndTheOthersInTheBatchAreStillTold() {
        List<SharedQueue> made = new ArrayList<>();
        try (IoThread io = IoThread.inline("shared-test", new int[0], () -> { })) {
            SharedCompletions shared = new SharedCompletions(io, deviceMaking(made), null, 1024);
            CompletionQueue cq = shared.join(10);
            assertSame(made.get(0), cq);
            assertSame(cq, shared.join(10), "room left: the same queue");
            Recording a = new Recording(), b = new Recording();
            a.throwing = true;
            shared.register(11, a);
            shared.register(12, b);
            SharedQueue q = made.get(0);
            q.entries.add(new long[] {11, 1});
            q.entries.add(new long[] {12, 2});
            q.entries.add(new long[] {11, 3});
            q.entries.add(new long[] {12, 4});
            q.entries.add(new long[] {13, 5});   // no member
            assertEquals(5, shared.poll());
            assertEquals(List.of(1L, 3L), a.wrIds);
            assertEquals(2, a.failures.size(), "a failed once per completion that threw");
            assertEquals(List.of(2L, 4L), b.wrIds, "b was told of both of its completions");
            assertEquals(0, b.failures.size());
            assertEquals(1, shared.strays());

            shared.arm();
            assertEquals(1, q.arms);
            shared.leave(cq, 11, 10);
            q.entries.add(new long[] {11, 6});
            shared.poll();
            assertEquals(2, shared.strays(), "a's number after it left");
            assertEquals(10, shared.reserved());
            assertNull(shared.join(1025), "more than a queue may have");
            assertEquals(1, made.size());
            assertThrows(IllegalArgumentException.class, () -> new SharedCompletions(io, deviceMaking(made), null, 0));
        }
    }
}
