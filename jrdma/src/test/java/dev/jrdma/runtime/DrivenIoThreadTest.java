package dev.jrdma.runtime;

import dev.jrdma.os.LibC;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A driven IO thread ({@link IoThread#driven}), the runtime side of {@code Rdma.ioLoop}: another
 * framework's event loop binds it, polls it, and sleeps in it until a task, an event fd, or a
 * wakeup; nobody else polls it or runs its callbacks. The sleeps here are an hour long and no
 * timer caps them, so a wake that does not happen hangs the test until its own timeout.
 */
class DrivenIoThreadTest {
    private static final long HOUR = TimeUnit.HOURS.toNanos(1);
    private static final long T = 30;

    /** A driver thread: binds {@code t}, then runs {@code body} on it; the future has what it returned or threw. */
    private static <V> CompletableFuture<V> onDriver(IoThread t, java.util.concurrent.Callable<V> body) {
        CompletableFuture<V> done = new CompletableFuture<>();
        Thread.ofPlatform().name("test-driver").start(() -> {
            V value = null;
            Throwable thrown = null;
            try {
                t.bind();
                value = body.call();
            } catch (Throwable e) {
                thrown = e;
            } finally {
                t.unbind();   // before the future completes: the test goes on with the loop unbound
            }
            if (thrown != null) {
                done.completeExceptionally(thrown);
            } else {
                done.complete(value);
            }
        });
        return done;
    }

    private static void untilAsleep(IoThread t, CompletableFuture<?> driver) throws InterruptedException {
        while (!t.sleepingNow()) {
            assertFalse(driver.isDone(), "the driver returned before it slept");
            Thread.sleep(1);
        }
    }

    @Test
    void wakeupEndsASleepThatWouldLastAnHour() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            CompletableFuture<Integer> slept = onDriver(t, () -> t.awaitWork(HOUR, () -> false));
            untilAsleep(t, slept);
            t.wakeup();
            assertEquals(0, slept.get(T, TimeUnit.SECONDS));
        }
    }

    @Test
    void aTaskFromAnotherThreadWakesTheSleeperAndRunsOnIt() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            CompletableFuture<Thread> ranOn = new CompletableFuture<>();
            CompletableFuture<Thread> driver = onDriver(t, () -> {
                t.awaitWork(HOUR, () -> false);
                while (!ranOn.isDone()) {
                    t.poll();
                }
                return Thread.currentThread();
            });
            untilAsleep(t, driver);
            t.execute(() -> ranOn.complete(Thread.currentThread()));
            assertSame(driver.get(T, TimeUnit.SECONDS), ranOn.get());
        }
    }

    @Test
    void aReadableEventFdEndsTheSleepAndIsAcknowledged() throws Exception {
        int fd = LibC.eventFd();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8);
            AtomicInteger acknowledged = new AtomicInteger();
            try (IoThread t = IoThread.driven("test-driven", new int[] {fd}, () -> {
                if (LibC.eventFdDrain(fd, Arena.ofAuto().allocate(8))) {
                    acknowledged.incrementAndGet();
                }
            })) {
                CompletableFuture<Integer> slept = onDriver(t, () -> t.awaitWork(HOUR, () -> false));
                untilAsleep(t, slept);
                LibC.eventFdSignal(fd, buf);
                slept.get(T, TimeUnit.SECONDS);
                assertEquals(1, acknowledged.get(), "the fd's event was read after the sleep");
            }
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void workOfTheDriversOwnKeepsItAwakeAndSourcesArmBeforeTheLastLook() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            AtomicInteger armed = new AtomicInteger();
            AtomicInteger found = new AtomicInteger(1);   // one completion came just before the arm
            CompletableFuture<Integer> driver = onDriver(t, () -> {
                t.add(new IoThread.Source() {
                    @Override
                    public int poll() {
                        return found.getAndSet(0);
                    }

                    @Override
                    public void arm() {
                        armed.incrementAndGet();
                    }
                });
                int first = t.awaitWork(HOUR, () -> false);        // the look after the arm finds it: no sleep
                BooleanSupplier mine = () -> true;
                int second = t.awaitWork(HOUR, mine);                // the driver has work: no sleep either
                return first * 10 + second;
            });
            assertEquals(10, driver.get(T, TimeUnit.SECONDS));
            assertEquals(2, armed.get());
        }
    }

    @Test
    void onlyTheBoundThreadPollsSleepsOrBinds() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            CompletableFuture<Void> release = new CompletableFuture<>();
            AtomicReference<Thread> bound = new AtomicReference<>();
            CompletableFuture<Object> driver = onDriver(t, () -> {
                bound.set(Thread.currentThread());
                while (!release.isDone()) {
                    t.poll();
                    Thread.onSpinWait();
                }
                return null;
            });
            while (bound.get() == null) {
                Thread.onSpinWait();
            }
            IllegalStateException polled = assertThrows(IllegalStateException.class, t::poll);
            assertTrue(polled.getMessage().contains("driven by thread \"test-driver\""), polled.getMessage());
            assertThrows(IllegalStateException.class, () -> t.awaitWork(1, () -> false));
            IllegalStateException bind = assertThrows(IllegalStateException.class, t::bind);
            assertTrue(bind.getMessage().contains("test-driver"), bind.getMessage());
            assertFalse(t.drivenByCaller());
            assertFalse(t.inThisThread());

            // A blocking wait of another thread waits for the driver: the task runs there, not here.
            CompletableFuture<Thread> f = new CompletableFuture<>();
            t.execute(() -> f.complete(Thread.currentThread()));
            assertSame(bound.get(), t.await(f, TimeUnit.SECONDS.toNanos(T)));

            release.complete(null);
            driver.get(T, TimeUnit.SECONDS);
            // Unbound: a blocking wait drives it itself again.
            assertTrue(t.drivenByCaller());
            CompletableFuture<Thread> g = new CompletableFuture<>();
            Thread.ofPlatform().start(() -> t.execute(() -> g.complete(Thread.currentThread()))).join();
            assertSame(Thread.currentThread(), t.await(g, TimeUnit.SECONDS.toNanos(T)));
        }
    }

    @Test
    void theBoundThreadIsItsThreadOutsideAPassToo() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            CompletableFuture<Boolean> driver = onDriver(t, () -> {
                AtomicReference<Thread> ran = new AtomicReference<>();
                t.execute(() -> ran.set(Thread.currentThread()));   // at once: no pass needed
                return t.inThisThread() && ran.get() == Thread.currentThread();
            });
            assertTrue(driver.get(T, TimeUnit.SECONDS));
        }
    }

    @Test
    void aSourceThatThrowsFailsAloneAndTheDriverGoesOn() throws Exception {
        try (IoThread t = IoThread.driven("test-driven", new int[0], () -> { })) {
            AtomicReference<Throwable> failed = new AtomicReference<>();
            CompletableFuture<Integer> driver = onDriver(t, () -> {
                t.add(new IoThread.Source() {
                    @Override
                    public int poll() {
                        throw new IllegalStateException("one connection's bug");
                    }

                    @Override
                    public void failed(Throwable e) {
                        failed.set(e);
                    }
                });
                return t.poll();
            });
            assertEquals(0, driver.get(T, TimeUnit.SECONDS));
            assertEquals("one connection's bug", failed.get().getMessage());
        }
    }

    @Test
    void aThreadOfItsOwnOrPlainInlineIsNotDriven() {
        try (IoThread inline = IoThread.inline("test-inline", new int[0], () -> { })) {
            assertThrows(IllegalStateException.class, inline::bind);
            assertThrows(IllegalStateException.class, () -> inline.awaitWork(1, () -> false));
        }
    }
}
