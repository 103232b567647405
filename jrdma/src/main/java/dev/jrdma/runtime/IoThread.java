package dev.jrdma.runtime;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * One IO loop: it runs control tasks handed to it, polls its work sources (completion queues,
 * the connection manager) and, when they have nothing, idles as its {@link IdleWait} says.
 * Like Agrona's agents, every pass counts the work it did, and only a pass with none idles.
 *
 * <p>The parts, as Agrona splits them: the {@link DutyCycle} (one pass: tasks, woken sources,
 * sources; the timers), who runs the passes ({@link ThreadRunner}: a thread of its own, with an
 * {@link IdleStrategy}; or {@link CallerInvoker}: inline, confined or driven, on the caller), and
 * the {@link WakeUp} (the eventfd and the poll(2) sleep). This class is their face.
 *
 * <p>Sources and tasks run on the loop's owner only, so they need no locks among themselves.
 * Other threads reach it through {@link #execute} and {@link #wake(Source)}, which go through
 * preallocated many-to-one queues ({@link HandOffQueue}) and wake it through the eventfd when it sleeps.
 *
 * <p><b>Inline</b> ({@link #inline}): no thread of its own; whichever application thread calls
 * {@link #poll()} runs one pass, one caller at a time, and for that while counts as "this thread".
 * Blocking calls of the library drive it themselves while they wait ({@link #await}).
 *
 * <p><b>Driven</b> ({@link #driven}): inline, and it can sleep ({@link #awaitWork}) and be woken
 * like a thread of its own, so that another framework's event loop can be its thread (Netty's
 * event loops in jrdma-netty). Once a thread {@link #bind binds} it, that thread alone polls it
 * and counts as "this thread" all the time, in a pass or not; other threads' blocking calls wait
 * for it rather than drive it, so no callback of it ever runs on another thread.
 */
public final class IoThread implements AutoCloseable {
    /** A work source polled every pass. */
    public interface Source {
        /** Does what work there is, without blocking; returns how much (0: none). */
        int poll();

        /** Before the thread sleeps (EVENT/ADAPTIVE): ask for an event at the next completion. */
        default void arm() {
        }

        /** {@link #poll} threw {@code t}: end what this source serves (the IO thread goes on). */
        default void failed(Throwable t) {
        }

        /**
         * Asked on this thread after a {@link #poll} that did no work: true when the source has
         * nothing to do until it calls {@link IoThread#wake(Source)} itself (from any thread: its
         * socket became readable, something was posted to it), so that it leaves the passes until
         * then and a pass costs O(sources with work), not O(sources). Before it says true it must
         * have armed what will wake it, and looked once more after arming. Default: never rests.
         */
        default boolean rest() {
            return false;
        }

        /**
         * Whether {@link #rest} can ever say true; asked once, when the source is added (or taken
         * back from rest). A pass asks {@link #rest} after an empty poll only of sources that say
         * so here, so that one that never rests (a shared completion queue, the connection
         * manager) costs a spinning pass one call, not two. A source that overrides {@link #rest}
         * must override this too, or it is simply never asked (and polled every pass).
         */
        default boolean mayRest() {
            return false;
        }
    }

    private final DutyCycle cycle;
    private final WakeUp wakeUp;
    private final LoopDriver loop;
    /** The same object as {@link #loop} when it has no thread of its own; else null. */
    private final CallerInvoker invoker;

    /**
     * @param eventFds           fds whose readability ends a sleep (completion channel, cm events)
     * @param onEventFdsReadable run after a sleep that one of them ended (e.g. acknowledge CQ events)
     */
    public IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable) {
        this(name, idle, eventFds, onEventFdsReadable, -1);
    }

    /**
     * @param cpu    the CPU to pin the thread to ({@code sched_setaffinity}), or -1 for none
     * @throws dev.jrdma.exceptions.NativeRdmaException when pinning fails (no such CPU, or not
     *                                                  allowed): the thread is not left running
     */
    public IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable, int cpu) {
        this.cycle = new DutyCycle(name);
        this.wakeUp = new WakeUp(eventFds, onEventFdsReadable);
        this.loop = new ThreadRunner(cycle, wakeUp, idle.newStrategy(), cpu);
        this.invoker = null;
    }

    private IoThread(String name, int[] eventFds, Runnable onEventFdsReadable, Thread owner, boolean driven) {
        this.cycle = new DutyCycle(name);
        this.wakeUp = new WakeUp(eventFds, onEventFdsReadable);
        this.invoker = new CallerInvoker(cycle, wakeUp, owner, driven);
        this.loop = invoker;
    }

    /** An IO "thread" without a thread: progress happens in {@link #poll()}, on the caller. */
    public static IoThread inline(String name, int[] eventFds, Runnable onEventFdsReadable) {
        return new IoThread(name, eventFds, onEventFdsReadable, null, false);
    }

    /**
     * An inline IO "thread" that a thread of the application drives and that can sleep until
     * there is work ({@link #awaitWork}) and be woken ({@link #wakeup}): an event loop of
     * another framework, bound to it with {@link #bind}.
     */
    public static IoThread driven(String name, int[] eventFds, Runnable onEventFdsReadable) {
        return new IoThread(name, eventFds, onEventFdsReadable, null, true);
    }

    /**
     * An inline IO "thread" that only {@code owner} drives, and on whose connections only
     * {@code owner} posts ({@code Rdma.Builder.singleThreaded}): a pass takes no compare-and-set,
     * and the operation path no lock. {@link #checkOwner} refuses every other thread.
     */
    public static IoThread confined(String name, int[] eventFds, Runnable onEventFdsReadable, Thread owner) {
        return new IoThread(name, eventFds, onEventFdsReadable, Objects.requireNonNull(owner, "owner"), false);
    }

    /** The kernel thread id (for /proc/self/task/TID), once started; 0 for an inline one. */
    public int tid() {
        return loop instanceof ThreadRunner r ? r.tid() : 0;
    }

    /** The CPU it is pinned to, or -1. */
    public int cpu() {
        return loop instanceof ThreadRunner r ? r.cpu() : -1;
    }

    public boolean isInline() {
        return invoker != null;
    }

    /**
     * {@return whether a caller that waits for this IO thread's work must drive it itself: inline,
     * and not bound to another thread (whose loop does the work)}
     */
    public boolean drivenByCaller() {
        return invoker != null && invoker.drivenByCaller();
    }

    /**
     * Driven: makes the calling thread the only one that polls it; from now on it counts as
     * "this thread" (tasks handed to it from it run at once, callbacks may close and post
     * without waiting), and other threads' blocking calls wait for it instead of polling.
     *
     * @throws IllegalStateException when it is not driven, or another thread is bound to it
     */
    public void bind() {
        invoker("bind").bind();
    }

    /** {@return the thread bound to drive it ({@link #bind}), or null} */
    public Thread boundDriver() {
        return invoker == null ? null : invoker.boundDriver();
    }

    /** Driven: the bound thread stops driving it; from then on blocking calls drive it themselves again. */
    public void unbind() {
        if (invoker != null) {
            invoker.unbind();
        }
    }

    /**
     * Inline only: one pass (tasks, then every source) on the calling thread; returns the work
     * done. Returns 0 at once when another thread is polling, or when called from inside a pass.
     */
    public int poll() {
        if (invoker == null) {
            throw new IllegalStateException(name() + " has its own thread: poll() is for the INLINE mode");
        }
        return invoker.poll();
    }

    /** Confined to one thread ({@link #confined}): its operation path takes no locks. */
    public boolean isConfined() {
        return invoker != null && invoker.confined();
    }

    /**
     * Confined: throws unless the caller is the owner, naming {@code what} was called. A single-
     * threaded instance called from another thread would otherwise race without a lock.
     */
    public void checkOwner(String what) {
        invoker("checkOwner").checkOwner(what);
    }

    /**
     * Waits for {@code f}, up to {@code timeoutNanos}; inline, by polling meanwhile. Used by the
     * library's blocking calls, so that they also work where no IO thread runs.
     */
    public <T> T await(CompletableFuture<T> f, long timeoutNanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        return loop.await(f, timeoutNanos);
    }

    public String name() {
        return cycle.name();
    }

    public boolean inThisThread() {
        return loop.inThisThread();
    }

    /** Inline: whether another thread is in a pass now (a {@link #poll} from this one returns 0 at once). */
    public boolean polledElsewhere() {
        return invoker != null && invoker.polledElsewhere();
    }

    /** Runs {@code task} on this thread soon (at once if called on it). */
    public void execute(Runnable task) {
        if (inThisThread()) {
            task.run();
            return;
        }
        handOff(task);
    }

    /**
     * Runs {@code task} on this thread after what it is running now: queued even when called on
     * it, so that a teardown asked for from a callback does not free what the callback's caller
     * (a source's poll) still uses.
     */
    public void executeLater(Runnable task) {
        if (!loop.running) {
            throw new IllegalStateException(name() + " is closed");
        }
        if (inThisThread()) {
            cycle.runLater(task);
        } else {
            handOff(task);
        }
    }

    private void handOff(Runnable task) {
        if (!loop.running) {
            throw new IllegalStateException(name() + " is closed");
        }
        cycle.handOff(task);
        if (loop.sleepsByItself()) {
            wakeUp.signalIfAsleep();
        }
    }

    /** Whether it is asleep, or about to be ({@link #awaitWork} or its own thread's sleep): for tests. */
    boolean sleepingNow() {
        return wakeUp.asleep();
    }

    /**
     * Driven: ends an {@link #awaitWork} now or makes the next one return at once (a task of the
     * driving framework is waiting). Costs a system call only while the loop sleeps.
     */
    public void wakeup() {
        wakeUp.signalIfAsleep();
    }

    /**
     * Driven, on its driver: arms the completion queues, looks once more, and sleeps until a
     * completion, a connection event, a task, a {@link #wakeup}, or {@code timeoutNanos} (at most
     * {@value DutyCycle#MAX_SLEEP_MS} ms when it has timers: timed checks run at least that often). {@code stayAwake} is
     * asked after the loop has said it sleeps: a framework's task queued before that is seen
     * there, one queued after it wakes the sleep through {@link #wakeup}.
     *
     * @param timeoutNanos the longest sleep; 0 or less: only arm and look
     * @param stayAwake    true when the driver has work of its own (do not sleep)
     * @return the work the last look did (0 after a sleep)
     */
    public int awaitWork(long timeoutNanos, BooleanSupplier stayAwake) {
        return invoker("awaitWork").awaitWork(timeoutNanos, stayAwake);
    }

    private CallerInvoker invoker(String what) {
        if (invoker == null) {
            throw new IllegalStateException(name() + " has its own thread: " + what + " is for a loop without one");
        }
        return invoker;
    }

    /** Adds a source; on this thread. */
    public void add(Source source) {
        cycle.add(source);
    }

    /** Removes a source, polled or resting; on this thread. */
    public void remove(Source source) {
        cycle.remove(source);
    }

    /**
     * A resting source ({@link Source#rest}) has work again: it is polled from the next pass on
     * (on this thread: from this one). Any thread; a wake for a source that is not resting (it
     * was woken already, or removed) is ignored. Wakes the thread if it sleeps.
     */
    public void wake(Source source) {
        if (inThisThread()) {
            cycle.wokenHere(source);
            return;
        }
        cycle.wokenElsewhere(source);
        if (loop.sleepsByItself()) {
            wakeUp.signalIfAsleep();
        }
    }

    /** Sources polled every pass now, and those at rest: for tests and diagnostics; on this thread. */
    int[] sourceCounts() {
        return cycle.sourceCounts();
    }

    /**
     * A check run after every sleep, every 1024 idle passes, and at least every {@value DutyCycle#MAX_SLEEP_MS} ms
     * while the thread is busy (deadlines); on this thread.
     */
    public void addTimer(IntSupplier timer) {
        cycle.addTimer(timer);
    }

    /** Stops the thread after the tasks already handed to it, and waits up to 10 s for it. */
    @Override
    public void close() {
        if (!loop.running) {
            return;
        }
        loop.close();
    }
}
