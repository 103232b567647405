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

    @Test
    void pollIsForInlineOnly() {
        try (IoThread t = new IoThread("test-io-threaded", IdleWait.SLEEP, new int[0], () -> { })) {
            assertThrows(IllegalStateException.class, t::poll);
        }
    }
}
