package dev.jrdma.runtime;

import dev.jrdma.spi.Log;
import dev.jrdma.os.LibC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * One IO thread: it runs control tasks handed to it, polls its work sources (completion queues,
 * the connection manager) and, when they have nothing, waits as its {@link IdleWait} says.
 * Like Agrona's agents, every pass counts the work it did, and only a pass with none idles.
 *
 * <p>Sources and tasks run on this thread only, so they need no locks among themselves. Other
 * threads reach it through {@link #execute}, which wakes it through an eventfd.
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
    }

    /**
     * How long ADAPTIVE spins with no work before it sleeps: about the round trip of a small
     * operation. Measured in time, not passes: a pass costs a few hundred ns on verbs but a
     * syscall or two per connection on tcp.
     */
    static final long ADAPTIVE_SPIN_NANOS = 50_000;
    /**
     * Idle passes between yields. A spinning thread that yields lets the threads it waits for
     * run when there are more runnable threads than CPUs (two vCPUs, two processes of one host).
     */
    static final int YIELD_EVERY = 64;
    /** The longest sleep: timed checks (deadlines) run at least this often. */
    static final int MAX_SLEEP_MS = 50;

    private final String name;
    private final IdleWait idle;
    private final Thread thread;
    private final boolean inline;
    /** Driven: inline, and may sleep in {@link #awaitWork} (its completion channel is armed then). */
    private final boolean driven;
    /** Driven: the thread bound to drive it ({@link #bind}); null while none is. */
    private volatile Thread boundDriver;
    /** How often {@link #await} looks whether a bound driver has gone. */
    private static final long UNBIND_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** The only thread that may poll and post, when confined; else null. */
    private final Thread owner;
    /**
     * Inline: the thread inside {@link #poll()} now; null when none. A plain field: only the
     * driver writes it, under {@link #inPass}, and a thread can only ever read itself here
     * while its own pass runs (it wrote it, and clears it before leaving), which is all
     * {@link #inThisThread} and the re-entry check ask.
     */
    private Thread driver;
    /**
     * Inline: 1 while a thread polls. Taken with one compare-and-set and given back with a
     * release store (no fence on x86): an empty poll is the inner loop of a spinning caller,
     * and a ReentrantLock plus volatile stores made up half of its cost.
     */
    @SuppressWarnings("unused")
    private volatile int inPass;
    private static final java.lang.invoke.VarHandle IN_PASS;

    static {
        try {
            IN_PASS = java.lang.invoke.MethodHandles.lookup().findVarHandle(IoThread.class, "inPass", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private int inlineIdlePasses;
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final int cpu;
    private volatile int tid;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** The sources polled every pass: those not resting; this thread's. */
    private final List<Source> sources = new ArrayList<>();
    /** The sources at rest ({@link Source#rest}): not polled until they {@link #wake} themselves; this thread's. */
    private final java.util.Set<Source> resting = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    /** Resting sources woken from other threads, taken back into the passes at the start of the next one. */
    private final Queue<Source> woken = new ConcurrentLinkedQueue<>();
    private final List<IntSupplier> timers = new ArrayList<>();
    private final int wakeFd;
    private final int[] eventFds;
    private final Runnable onEventFdsReadable;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollfds;
    private final MemorySegment wakeBuf = arena.allocate(8);
    private final ThreadLocal<MemorySegment> signalBuf = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8));
    private volatile boolean running = true;
    private volatile boolean sleeping;
    private boolean fdClosed;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();

    /**
     * @param eventFds           fds whose readability ends a sleep (completion channel, cm events)
     * @param onEventFdsReadable run after a sleep that one of them ended (e.g. acknowledge CQ events)
     */
    public IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable) {
        this(name, idle, eventFds, onEventFdsReadable, -1, false);
    }

    /**
     * @param cpu    the CPU to pin the thread to ({@code sched_setaffinity}), or -1 for none
     * @throws dev.jrdma.exceptions.NativeRdmaException when pinning fails (no such CPU, or not
     *                                                  allowed): the thread is not left running
     */
    public IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable, int cpu) {
        this(name, idle, eventFds, onEventFdsReadable, cpu, false);
    }

    /** An IO "thread" without a thread: progress happens in {@link #poll()}, on the caller. */
    public static IoThread inline(String name, int[] eventFds, Runnable onEventFdsReadable) {
        return new IoThread(name, IdleWait.SPIN, eventFds, onEventFdsReadable, -1, true, null);
    }

    /**
     * An inline IO "thread" that a thread of the application drives and that can sleep until
     * there is work ({@link #awaitWork}) and be woken ({@link #wakeup}): an event loop of
     * another framework, bound to it with {@link #bind}.
     */
    public static IoThread driven(String name, int[] eventFds, Runnable onEventFdsReadable) {
        return new IoThread(name, IdleWait.SLEEP, eventFds, onEventFdsReadable, -1, true, null, true);
    }

    /**
     * An inline IO "thread" that only {@code owner} drives, and on whose connections only
     * {@code owner} posts ({@code Rdma.Builder.singleThreaded}): a pass takes no compare-and-set,
     * and the operation path no lock. {@link #checkOwner} refuses every other thread.
     */
    public static IoThread confined(String name, int[] eventFds, Runnable onEventFdsReadable, Thread owner) {
        return new IoThread(name, IdleWait.SPIN, eventFds, onEventFdsReadable, -1, true,
                java.util.Objects.requireNonNull(owner, "owner"));
    }

    private IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable, int cpu, boolean inline) {
        this(name, idle, eventFds, onEventFdsReadable, cpu, inline, null);
    }

    private IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable, int cpu, boolean inline,
                     Thread owner) {
        this(name, idle, eventFds, onEventFdsReadable, cpu, inline, owner, false);
    }

    private IoThread(String name, IdleWait idle, int[] eventFds, Runnable onEventFdsReadable, int cpu, boolean inline,
                     Thread owner, boolean driven) {
        this.name = name;
        this.driven = driven;
        this.owner = owner;
        this.idle = idle;
        this.eventFds = eventFds.clone();
        this.onEventFdsReadable = onEventFdsReadable;
        this.cpu = cpu;
        this.inline = inline;
        this.wakeFd = LibC.eventFd();
        this.pollfds = arena.allocate(LibC.POLLFD, eventFds.length + 1);
        if (inline) {
            this.thread = null;
            return;
        }
        this.thread = Thread.ofPlatform().name(name).daemon(true).unstarted(this::run);
        thread.start();
        try {
            started.get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            joinQuietly();   // it failed to start and is ending: gone when the caller sees the failure
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (InterruptedException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(name + " did not start", e);
        }
    }

    private void joinQuietly() {
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }

    /** The kernel thread id (for /proc/self/task/TID), once started; 0 for an inline one. */
    public int tid() {
        return tid;
    }

    /** The CPU it is pinned to, or -1. */
    public int cpu() {
        return cpu;
    }

    public boolean isInline() {
        return inline;
    }

    /**
     * {@return whether a caller that waits for this IO thread's work must drive it itself: inline,
     * and not bound to another thread (whose loop does the work)}
     */
    public boolean drivenByCaller() {
        if (!inline) {
            return false;
        }
        Thread b = boundDriver;
        return b == null || b == Thread.currentThread();
    }

    /**
     * Driven: makes the calling thread the only one that polls it; from now on it counts as
     * "this thread" (tasks handed to it from it run at once, callbacks may close and post
     * without waiting), and other threads' blocking calls wait for it instead of polling.
     *
     * @throws IllegalStateException when it is not driven, or another thread is bound to it
     */
    public void bind() {
        if (!driven) {
            throw new IllegalStateException(name + " is not a driven IO loop");
        }
        Thread me = Thread.currentThread();
        Thread b = boundDriver;
        if (b != null && b != me) {
            throw new IllegalStateException(name + " is already driven by thread \"" + b.getName() + "\"");
        }
        boundDriver = me;
    }

    /** {@return the thread bound to drive it ({@link #bind}), or null} */
    public Thread boundDriver() {
        return boundDriver;
    }

    /** Driven: the bound thread stops driving it; from then on blocking calls drive it themselves again. */
    public void unbind() {
        if (boundDriver == Thread.currentThread()) {
            boundDriver = null;
        }
    }

    /**
     * Inline only: one pass (tasks, then every source) on the calling thread; returns the work
     * done. Returns 0 at once when another thread is polling, or when called from inside a pass.
     */
    public int poll() {
        if (!inline) {
            throw new IllegalStateException(name + " has its own thread: poll() is for the INLINE mode");
        }
        Thread me = Thread.currentThread();
        if (driver == me) {
            return 0;   // from inside a pass (a callback): passes do not nest
        }
        Thread bound = boundDriver;
        if (bound != null && bound != me) {
            throw new IllegalStateException("poll from thread \"" + me.getName() + "\": " + name
                    + " is driven by thread \"" + bound.getName() + "\" alone");
        }
        if (owner != null) {
            // Confined: nobody else polls, so the pass needs no compare-and-set.
            if (me != owner) {
                throw notOwner("poll", me);
            }
        } else if (!IN_PASS.compareAndSet(this, 0, 1)) {
            return 0;
        }
        driver = me;
        try {
            return pass();
        } finally {
            driver = null;
            if (owner == null) {
                IN_PASS.setRelease(this, 0);
            }
        }
    }

    /** One inline pass: tasks, then every source, and the timers every 1024 idle passes. */
    private int pass() {
        int work = runTasks() + admitWoken();
        for (int i = 0; i < sources.size(); i++) {
            // Driven: behind the barrier, as on a thread of its own (a framework's loop must not
            // die of one connection's failure); plain inline: the caller sees what threw.
            Source s = sources.get(i);
            int w = driven ? pollBarrier(s) : s.poll();
            if (w == 0 && restBarrier(s)) {
                i = restAt(i);
            }
            work += w;
        }
        // As on a thread of its own: timers every 1024 idle passes, not a syscall per empty poll,
        // and every 1024 busy ones once they are due.
        if (work == 0 && (++inlineIdlePasses & 1023) == 0) {
            runTimers();
        } else if (work > 0 && (++busyPasses & 1023) == 0) {
            timersIfDue();
        }
        return work;
    }

    /** Confined to one thread ({@link #confined}): its operation path takes no locks. */
    public boolean isConfined() {
        return owner != null;
    }

    /**
     * Confined: throws unless the caller is the owner, naming {@code what} was called. A single-
     * threaded instance called from another thread would otherwise race without a lock.
     */
    public void checkOwner(String what) {
        Thread me = Thread.currentThread();
        if (me != owner) {
            throw notOwner(what, me);
        }
    }

    private IllegalStateException notOwner(String what, Thread me) {
        return new IllegalStateException(what + " from thread \"" + me.getName() + "\": this Rdma is single-threaded "
                + "(Rdma.Builder.singleThreaded), and only its owner, thread \"" + owner.getName()
                + "\", may poll, post and close messages on it");
    }

    /**
     * Waits for {@code f}, up to {@code timeoutNanos}; inline, by polling meanwhile. Used by the
     * library's blocking calls, so that they also work where no IO thread runs.
     */
    public <T> T await(CompletableFuture<T> f, long timeoutNanos)
            throws InterruptedException, java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException {
        if (!inline) {
            return f.get(timeoutNanos, TimeUnit.NANOSECONDS);   // its own thread does the work
        }
        long deadline = System.nanoTime() + timeoutNanos;
        while (!f.isDone()) {
            if (!drivenByCaller()) {
                // Its bound driver does the work, unless that driver unbinds meanwhile (a Netty
                // event loop that ends while another loop waits on this one, as a group shuts
                // down): then nobody would, and the caller drives it. Look again every 10 ms.
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new java.util.concurrent.TimeoutException();
                }
                try {
                    return f.get(Math.min(left, UNBIND_CHECK_NANOS), TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.TimeoutException notYet) {
                    continue;
                }
            }
            if (poll() == 0) {
                Thread.onSpinWait();
            }
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            if (System.nanoTime() - deadline > 0) {
                throw new java.util.concurrent.TimeoutException();
            }
        }
        return f.get();
    }

    public String name() {
        return name;
    }

    public boolean inThisThread() {
        if (!inline) {
            return Thread.currentThread() == thread;
        }
        Thread me = Thread.currentThread();
        return driver == me || boundDriver == me;
    }

    /** Inline: whether another thread is in a pass now (a {@link #poll} from this one returns 0 at once). */
    public boolean polledElsewhere() {
        return inPass != 0 && driver != Thread.currentThread();
    }

    /** Runs {@code task} on this thread soon (at once if called on it). */
    public void execute(Runnable task) {
        if (inThisThread()) {
            task.run();
            return;
        }
        if (!running) {
            throw new IllegalStateException(name + " is closed");
        }
        tasks.add(task);
        if ((!inline || driven) && sleeping) {
            wake();
        }
    }

    /**
     * Runs {@code task} on this thread after what it is running now: queued even when called on
     * it, so that a teardown asked for from a callback does not free what the callback's caller
     * (a source's poll) still uses.
     */
    public void executeLater(Runnable task) {
        if (!running) {
            throw new IllegalStateException(name + " is closed");
        }
        tasks.add(task);
        if (!inThisThread() && (!inline || driven) && sleeping) {
            wake();
        }
    }

    /** Whether it is asleep, or about to be ({@link #awaitWork} or its own thread's sleep): for tests. */
    boolean sleepingNow() {
        return sleeping;
    }

    /**
     * Driven: ends an {@link #awaitWork} now or makes the next one return at once (a task of the
     * driving framework is waiting). Costs a system call only while the loop sleeps.
     */
    public void wakeup() {
        if (sleeping) {
            wake();
        }
    }

    /**
     * Driven, on its driver: arms the completion queues, looks once more, and sleeps until a
     * completion, a connection event, a task, a {@link #wakeup}, or {@code timeoutNanos} (at most
     * {@value #MAX_SLEEP_MS} ms when it has timers: timed checks run at least that often). {@code stayAwake} is
     * asked after the loop has said it sleeps: a framework's task queued before that is seen
     * there, one queued after it wakes the sleep through {@link #wakeup}.
     *
     * @param timeoutNanos the longest sleep; 0 or less: only arm and look
     * @param stayAwake    true when the driver has work of its own (do not sleep)
     * @return the work the last look did (0 after a sleep)
     */
    public int awaitWork(long timeoutNanos, java.util.function.BooleanSupplier stayAwake) {
        if (!driven) {
            throw new IllegalStateException(name + " is not a driven IO loop");
        }
        Thread me = Thread.currentThread();
        Thread bound = boundDriver;
        if (bound != me || driver == me) {
            throw new IllegalStateException("awaitWork from thread \"" + me.getName() + "\": only " + name
                    + "'s bound driver may sleep in it, outside a pass");
        }
        if (!IN_PASS.compareAndSet(this, 0, 1)) {
            return 0;   // another thread in a pass: only while unbound, which the check above excludes
        }
        driver = me;
        int work = 0;
        try {
            armSources();
            sleeping = true;
            try {
                work = runTasks() + admitWoken();
                for (int i = 0; i < sources.size(); i++) {
                    work += pollBarrier(sources.get(i));
                }
                if (work > 0 || !running || timeoutNanos <= 0 || stayAwake.getAsBoolean()) {
                    return work;
                }
                // Rounded up: a sleep shorter than asked would make the driver's timer fire early.
                long ms = Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(timeoutNanos, Long.MAX_VALUE - 999_999) + 999_999));
                if (!timers.isEmpty()) {
                    ms = Math.min(ms, MAX_SLEEP_MS);   // the deadlines' checks
                }
                pollFds((int) Math.min(Integer.MAX_VALUE, ms));
            } finally {
                sleeping = false;
            }
            LibC.eventFdDrain(wakeFd, wakeBuf);
            onEventFdsReadable.run();
            runTimers();
            return work;
        } finally {
            driver = null;
            IN_PASS.setRelease(this, 0);
        }
    }

    /** Signals the eventfd unless the thread has already closed it (the lock orders the two). */
    private synchronized void wake() {
        if (!fdClosed) {
            LibC.eventFdSignal(wakeFd, signalBuf.get());
        }
    }

    private synchronized void closeFd() {
        fdClosed = true;
        LibC.close(wakeFd);
    }

    /** Adds a source; on this thread. */
    public void add(Source source) {
        sources.add(source);
    }

    /** Removes a source, polled or resting; on this thread. */
    public void remove(Source source) {
        if (!sources.remove(source)) {
            resting.remove(source);
        }
    }

    /**
     * A resting source ({@link Source#rest}) has work again: it is polled from the next pass on
     * (on this thread: from this one). Any thread; a wake for a source that is not resting (it
     * was woken already, or removed) is ignored. Wakes the thread if it sleeps.
     */
    public void wake(Source source) {
        if (inThisThread()) {
            if (resting.remove(source)) {
                sources.add(source);   // polled later in this pass: passes index up to size()
            }
            return;
        }
        woken.add(source);
        if ((!inline || driven) && sleeping) {
            wake();
        }
    }

    /** Takes the woken sources back into the passes; returns how many (work: the pass must not idle). */
    private int admitWoken() {
        if (woken.isEmpty()) {
            return 0;
        }
        int n = 0;
        Source s;
        while ((s = woken.poll()) != null) {
            if (resting.remove(s)) {
                sources.add(s);
                n++;
            }
        }
        return n;
    }

    /** Asks {@code s} whether it rests, behind the exception barrier (a throw fails it, and it does not rest). */
    private boolean restBarrier(Source s) {
        try {
            return s.rest();
        } catch (Throwable t) {
            sourceFailed(s, t);
            return false;
        }
    }

    /**
     * Takes the source at {@code i} out of the passes (the last one takes its place: the order of
     * sources is no promise); returns the index the pass goes on from.
     */
    private int restAt(int i) {
        Source s = sources.get(i);
        int last = sources.size() - 1;
        sources.set(i, sources.get(last));
        sources.remove(last);
        resting.add(s);
        return i - 1;
    }

    /** Sources polled every pass now, and those at rest: for tests and diagnostics; on this thread. */
    int[] sourceCounts() {
        return new int[] {sources.size(), resting.size()};
    }

    /**
     * A check run after every sleep, every 1024 idle passes, and at least every {@value #MAX_SLEEP_MS} ms
     * while the thread is busy (deadlines); on this thread.
     */
    public void addTimer(IntSupplier timer) {
        timers.add(timer);
    }

    private int busyPasses;
    private long timersRan;

    private void runTimers() {
        timersRan = System.nanoTime();
        for (int i = 0; i < timers.size(); i++) {
            timers.get(i).getAsInt();
        }
    }

    /** Busy: the timers, when they last ran {@value #MAX_SLEEP_MS} ms ago or more. */
    private void timersIfDue() {
        if (!timers.isEmpty() && System.nanoTime() - timersRan >= TimeUnit.MILLISECONDS.toNanos(MAX_SLEEP_MS)) {
            runTimers();
        }
    }

    private void run() {
        int idlePasses = 0;
        long idleSince = 0;
        try {
            tid = LibC.gettid();
            if (cpu >= 0) {
                LibC.pinCurrentThread(cpu);
            }
        } catch (RuntimeException e) {
            closeFd();
            arena.close();
            started.completeExceptionally(e);
            stopped.complete(null);
            return;
        }
        started.complete(null);
        try {
            while (running) {
                int work = runTasks() + admitWoken();
                for (int i = 0; i < sources.size(); i++) {
                    Source s = sources.get(i);
                    int w = pollBarrier(s);
                    if (w == 0 && restBarrier(s)) {
                        i = restAt(i);
                    }
                    work += w;
                }
                if (work > 0) {
                    idlePasses = 0;
                    if ((++busyPasses & 1023) == 0) {
                        timersIfDue();   // a thread that never idles runs them too
                    }
                    continue;
                }
                if (idlePasses++ == 0) {
                    idleSince = System.nanoTime();
                }
                if ((idlePasses & 1023) == 0) {
                    runTimers();
                }
                // ADAPTIVE spins for a time, not a number of passes: a pass over many connections
                // is long, and 64 of them before the first sleep kept an idle thread busy.
                if (idle == IdleWait.SPIN || (idle == IdleWait.SPIN_THEN_SLEEP
                        && (idlePasses < 2 || System.nanoTime() - idleSince < ADAPTIVE_SPIN_NANOS))) {
                    if ((idlePasses & (YIELD_EVERY - 1)) == 0) {
                        Thread.yield();
                    } else {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                sleep();
                runTimers();
                idlePasses = 0;
            }
        } finally {
            runTasks();
            closeFd();
            arena.close();
            stopped.complete(null);
        }
    }

    /**
     * Polls a source behind the exception barrier: a throwable fails that source (it ends its
     * connection, see {@link Source#failed}) and is logged, and the thread goes on with the
     * others. Logged at 1, 2, 4, 8... failures, so a source that keeps failing cannot flood the log.
     */
    private int pollBarrier(Source source) {
        try {
            return source.poll();
        } catch (Throwable t) {
            sourceFailed(source, t);
            return 0;
        }
    }

    private void sourceFailed(Source source, Throwable t) {
        long n = ++sourceFailures;
        try {
            source.failed(t);
        } catch (Throwable again) {
            t.addSuppressed(again);
        }
        if ((n & (n - 1)) == 0) {
            Log.quietly(System.Logger.Level.ERROR, name + ": a source failed (" + n + " so far); the thread goes on", t);
        }
    }

    private long sourceFailures;

    private int runTasks() {
        int n = 0;
        Runnable r;
        while ((r = tasks.poll()) != null) {
            n++;
            try {
                r.run();
            } catch (Throwable t) {
                Log.quietly(System.Logger.Level.ERROR, name + ": a task failed", t);
            }
        }
        return n;
    }

    /** Asks every source for an event at its next completion (before a sleep). */
    private void armSources() {
        for (int i = 0; i < sources.size(); i++) {
            Source source = sources.get(i);
            try {
                source.arm();
            } catch (Throwable t) {
                sourceFailed(source, t);
            }
        }
    }

    /** Sleeps in poll(2) on the wake eventfd and the event fds, up to {@code timeoutMs}. */
    private void pollFds(int timeoutMs) {
        LibC.pollEntry(pollfds, 0, wakeFd);
        for (int i = 0; i < eventFds.length; i++) {
            LibC.pollEntry(pollfds, i + 1, eventFds[i]);
        }
        LibC.poll(pollfds, eventFds.length + 1, timeoutMs);
    }

    /** Arms every source, looks once more (a completion may have come before the arm), then sleeps in poll(2). */
    private void sleep() {
        armSources();
        sleeping = true;
        try {
            int again = tasks.isEmpty() && woken.isEmpty() ? 0 : 1;
            for (int i = 0; i < sources.size() && again == 0; i++) {
                again += pollBarrier(sources.get(i));
            }
            if (again > 0 || !running) {
                return;
            }
            pollFds(MAX_SLEEP_MS);
        } finally {
            sleeping = false;
        }
        LibC.eventFdDrain(wakeFd, wakeBuf);
        onEventFdsReadable.run();
    }

    /** Stops the thread after the tasks already handed to it, and waits up to 10 s for it. */
    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        if (inline) {
            if (driven) {
                wake();   // a driver asleep in awaitWork holds the pass: end its sleep
            }
            boolean reentered = driver == Thread.currentThread();   // close from a callback of a pass
            while (!reentered && !IN_PASS.compareAndSet(this, 0, 1)) {
                Thread.yield();   // another thread's pass: it ends soon
            }
            try {
                driver = Thread.currentThread();
                runTasks();
            } finally {
                if (!reentered) {
                    driver = null;
                    IN_PASS.setRelease(this, 0);
                }
            }
            closeFd();
            arena.close();
            stopped.complete(null);
            return;
        }
        wake();
        if (!inThisThread()) {
            try {
                stopped.get(10, TimeUnit.SECONDS);
                // stopped completes just before the thread ends: wait for the end, so that once
                // close returns the thread is gone (not merely finishing).
                thread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                throw new IllegalStateException(name + " did not stop within 10 s", e);
            }
        }
    }
}
