package dev.jrdma.runtime;

import dev.jrdma.exceptions.NativeRdmaException;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** IO threads without a device: CPU pinning as the kernel sees it, and the INLINE mode. */
class IoThreadTest {

    private static String cpusAllowed(int tid) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/task/" + tid + "/status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return line.substring(line.indexOf(':') + 1).trim();
            }
        }
        throw new AssertionError("no Cpus_allowed_list for task " + tid);
    }

    @Test
    void pinnedThreadIsAllowedOnlyItsCpu() throws Exception {
        int last = Runtime.getRuntime().availableProcessors() - 1;
        try (IoThread t = new IoThread("test-io-pinned", IdleWait.SLEEP, new int[0], () -> { }, last)) {
            assertTrue(t.tid() > 0);
            assertEquals(String.valueOf(last), cpusAllowed(t.tid()));
            // And it works: a task runs on it.
            CompletableFuture<String> ran = new CompletableFuture<>();
            t.execute(() -> ran.complete(Thread.currentThread().getName()));
            assertEquals("test-io-pinned", ran.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void unpinnedThreadKeepsTheProcessMask() throws Exception {
        try (IoThread t = new IoThread("test-io-free", IdleWait.SLEEP, new int[0], () -> { })) {
            assertEquals(cpusAllowed((int) ProcessHandle.current().pid()), cpusAllowed(t.tid()));
        }
    }

    @Test
    void pinningToACpuThatIsNotThereFailsNamingIt() {
        NativeRdmaException e = assertThrows(NativeRdmaException.class,
                () -> new IoThread("test-io-bad", IdleWait.SLEEP, new int[0], () -> { }, 1023));
        assertTrue(e.getMessage().contains("sched_setaffinity") && e.getMessage().contains("cpu 1023"), e.getMessage());
        assertTrue(e.getMessage().contains("EINVAL"), e.getMessage());
        assertFalse(Thread.getAllStackTraces().keySet().stream().anyMatch(th -> th.getName().equals("test-io-bad")),
                "the thread that could not be pinned is gone");
    }

    @Test
    void inlineRunsTasksAndSourcesOnlyInPollOnTheCaller() throws Exception {
        try (IoThread t = IoThread.inline("test-inline", new int[0], () -> { })) {
            AtomicInteger polled = new AtomicInteger();
            CompletableFuture<Thread> ranOn = new CompletableFuture<>();
            Thread other = Thread.ofPlatform().start(() -> t.execute(() -> {
                t.add(() -> polled.incrementAndGet() > 3 ? 0 : 1);
                ranOn.complete(Thread.currentThread());
            }));
            other.join();
            assertFalse(ranOn.isDone(), "nothing runs before poll()");
            assertTrue(t.poll() >= 1);
            assertEquals(Thread.currentThread(), ranOn.getNow(null));
            while (t.poll() > 0) {
                assertTrue(polled.get() < 10);
            }
            assertEquals(4, polled.get());
            // A blocking wait drives it too.
            CompletableFuture<Integer> f = new CompletableFuture<>();
            Thread.ofPlatform().start(() -> t.execute(() -> f.complete(7))).join();
            assertEquals(7, t.await(f, TimeUnit.SECONDS.toNanos(5)));
            assertThrows(java.util.concurrent.TimeoutException.class,
                    () -> t.await(new CompletableFuture<>(), TimeUnit.MILLISECONDS.toNanos(50)));
        }
    }

    /** A source that counts its polls and rests whenever it is asked, while {@code rests} says so. */
    private static final class RestingSource implements IoThread.Source {
        final AtomicInteger polls = new AtomicInteger();
        volatile boolean rests = true;
        volatile int work;

        @Override
        public int poll() {
            polls.incrementAndGet();
            int w = work;
            work = 0;
            return w;
        }

        @Override
        public boolean rest() {
            return rests;
        }

        @Override
        public boolean mayRest() {
            return true;
        }
    }

    @Test
    void aRestingSourceIsNotPolledUntilItIsWoken() throws Exception {
        try (IoThread t = IoThread.inline("test-rest", new int[0], () -> { })) {
            RestingSource s = new RestingSource();
            IoThread.Source busy = () -> 0;
            t.execute(() -> {
                t.add(busy);
                t.add(s);
            });
            t.poll();   // runs the task (adds both), polls both: s found nothing and rests
            assertEquals(1, s.polls.get());
            assertEquals(1, t.sourceCounts()[0], "only the source that never rests is polled");
            assertEquals(1, t.sourceCounts()[1]);
            for (int i = 0; i < 100; i++) {
                t.poll();
            }
            assertEquals(1, s.polls.get(), "not polled while at rest");
            // Woken from another thread: polled from the next pass on, and it keeps its place while it has work.
            s.work = 1;
            Thread.ofPlatform().start(() -> t.wake(s)).join();
            assertEquals(1, s.polls.get(), "a wake from another thread takes effect in a pass");
            assertTrue(t.poll() >= 2, "the wake and the source's work count as work");
            assertEquals(2, s.polls.get());
            assertEquals(2, t.sourceCounts()[0], "polled again");
            t.poll();   // it found nothing now: back to rest
            assertEquals(3, s.polls.get());
            assertEquals(1, t.sourceCounts()[1]);
            // A wake for a source that is not resting (or was removed) changes nothing.
            s.rests = false;
            t.wake(s);   // on no thread of the loop's: queued, and taken at the next pass
            t.poll();
            assertEquals(4, s.polls.get());
            t.poll();
            assertEquals(5, s.polls.get(), "it said it does not rest: polled every pass");
            t.wake(s);
            t.poll();
            assertEquals(2, t.sourceCounts()[0], "a wake of a polled source adds no second place");
            t.execute(() -> t.remove(s));
            t.poll();
            int polls = s.polls.get();
            t.wake(s);
            t.poll();
            t.poll();
            assertEquals(polls, s.polls.get(), "a removed source is not polled, woken or not");
            assertEquals(1, t.sourceCounts()[0]);
            assertEquals(0, t.sourceCounts()[1]);
        }
    }

    @Test
    void aSourceWokenWhileItsThreadSleepsIsPolledAgain() throws Exception {
        try (IoThread t = new IoThread("test-rest-sleep", IdleWait.SLEEP, new int[0], () -> { })) {
            RestingSource s = new RestingSource();
            CompletableFuture<Void> added = new CompletableFuture<>();
            t.execute(() -> {
                t.add(s);
                added.complete(null);
            });
            added.get(5, TimeUnit.SECONDS);
            // Resting, and the thread asleep: a wake from here gets it polled again. Looked for over 5 s.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!(t.sleepingNow() && s.polls.get() >= 1) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertTrue(t.sleepingNow(), "the thread sleeps");
            int before = s.polls.get();
            s.work = 1;
            t.wake(s);
            while (s.polls.get() == before && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertTrue(s.polls.get() > before, "polled after its wake");
        }
    }

    @Test
    void pollIsForInlineOnly() {
        try (IoThread t = new IoThread("test-io-threaded", IdleWait.SLEEP, new int[0], () -> { })) {
            assertThrows(IllegalStateException.class, t::poll);
        }
    }
}
