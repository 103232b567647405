package dev.jrdma.runtime;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * An IO loop without a thread of its own (Agrona's {@code AgentInvoker}): whichever thread calls
 * {@link #poll} runs one pass, one caller at a time, and for that while is the loop's owner.
 * Three forms:
 * <ul>
 *   <li><b>inline</b>: any thread may poll; the library's blocking calls poll while they wait;
 *   <li><b>confined</b>: only {@code owner} may poll and post (a single-threaded Rdma): a pass
 *       takes no compare-and-set;
 *   <li><b>driven</b>: another framework's event loop drives it and may sleep in it
 *       ({@link #awaitWork}); once a thread {@link #bind binds} it, that thread alone polls and is
 *       the owner all the time, in a pass or not, and other threads' blocking calls wait for it.
 * </ul>
 */
final class CallerInvoker extends LoopDriver {
    /** How often {@link #await} looks whether a bound driver has gone. */
    private static final long UNBIND_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final VarHandle IN_PASS;

    static {
        try {
            IN_PASS = MethodHandles.lookup().findVarHandle(CallerInvoker.class, "inPass", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The only thread that may poll and post, when confined; else null. */
    private final Thread owner;
    private final boolean driven;
    /** Driven: the thread bound to drive it ({@link #bind}); null while none is. */
    private volatile Thread boundDriver;
    /**
     * The thread inside a pass now; null when none. A plain field: only the driver writes it,
     * under {@link #inPass}, and a thread can only ever read itself here while its own pass runs
     * (it wrote it, and clears it before leaving), which is all {@link #inThisThread} and the
     * re-entry check ask.
     */
    private Thread driver;
    /**
     * 1 while a thread polls. Taken with one compare-and-set and given back with a release store
     * (no fence on x86): an empty poll is the inner loop of a spinning caller, and a ReentrantLock
     * plus volatile stores made up half of its cost.
     */
    @SuppressWarnings("unused")
    private volatile int inPass;

    CallerInvoker(DutyCycle cycle, WakeUp wakeUp, Thread owner, boolean driven) {
        super(cycle, wakeUp);
        this.owner = owner;
        this.driven = driven;
    }

    boolean driven() {
        return driven;
    }

    boolean confined() {
        return owner != null;
    }

    @Override
    boolean inThisThread() {
        Thread me = Thread.currentThread();
        return driver == me || boundDriver == me;
    }

    @Override
    boolean sleepsByItself() {
        return driven;
    }

    /** Whether another thread is in a pass now (a {@link #poll} from this one returns 0 at once). */
    boolean polledElsewhere() {
        return inPass != 0 && driver != Thread.currentThread();
    }

    /** Whether a caller waiting for this loop's work must drive it itself: not bound to another thread. */
    boolean drivenByCaller() {
        Thread b = boundDriver;
        return b == null || b == Thread.currentThread();
    }

    /** One pass on the calling thread; 0 at once when another thread is in one, or from inside a pass. */
    int poll() {
        Thread me = Thread.currentThread();
        if (driver == me) {
            return 0;   // from inside a pass (a callback): passes do not nest
        }
        Thread bound = boundDriver;
        if (bound != null && bound != me) {
            throw new IllegalStateException("poll from thread \"" + me.getName() + "\": " + cycle.name()
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
            // Driven: behind the barrier, as on a thread of its own (a framework's loop must not
            // die of one connection's failure); plain inline: the caller sees what threw.
            int work = cycle.pass(driven);
            cycle.afterPass(work, false);
            return work;
        } finally {
            driver = null;
            if (owner == null) {
                IN_PASS.setRelease(this, 0);
            }
        }
    }

    /** Confined: throws unless the caller is the owner, naming {@code what} was called. */
    void checkOwner(String what) {
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

    /** Driven: makes the calling thread the only one that polls it. */
    void bind() {
        if (!driven) {
            throw new IllegalStateException(cycle.name() + " is not a driven IO loop");
        }
        Thread me = Thread.currentThread();
        Thread b = boundDriver;
        if (b != null && b != me) {
            throw new IllegalStateException(cycle.name() + " is already driven by thread \"" + b.getName() + "\"");
        }
        boundDriver = me;
    }

    Thread boundDriver() {
        return boundDriver;
    }

    void unbind() {
        if (boundDriver == Thread.currentThread()) {
            boundDriver = null;
        }
    }

    @Override
    <T> T await(CompletableFuture<T> f, long timeoutNanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (!f.isDone()) {
            if (!drivenByCaller()) {
                // Its bound driver does the work, unless that driver unbinds meanwhile (a Netty
                // event loop that ends while another loop waits on this one, as a group shuts
                // down): then nobody would, and the caller drives it. Look again every 10 ms.
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new TimeoutException();
                }
                try {
                    return f.get(Math.min(left, UNBIND_CHECK_NANOS), TimeUnit.NANOSECONDS);
                } catch (TimeoutException notYet) {
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
                throw new TimeoutException();
            }
        }
        return f.get();
    }

    /**
     * Driven, on its bound driver: arms the sources, looks once more, and sleeps until a
     * completion, a connection event, a task, a wake-up, or {@code timeoutNanos} (at most
     * {@value DutyCycle#MAX_SLEEP_MS} ms when it has timers).
     */
    int awaitWork(long timeoutNanos, BooleanSupplier stayAwake) {
        if (!driven) {
            throw new IllegalStateException(cycle.name() + " is not a driven IO loop");
        }
        Thread me = Thread.currentThread();
        if (boundDriver != me || driver == me) {
            throw new IllegalStateException("awaitWork from thread \"" + me.getName() + "\": only " + cycle.name()
                    + "'s bound driver may sleep in it, outside a pass");
        }
        if (!IN_PASS.compareAndSet(this, 0, 1)) {
            return 0;   // another thread in a pass: only while unbound, which the check above excludes
        }
        driver = me;
        try {
            cycle.armSources();
            wakeUp.asleep(true);
            try {
                int work = cycle.lookAll();
                if (work > 0 || !running || timeoutNanos <= 0 || stayAwake.getAsBoolean()) {
                    return work;
                }
                wakeUp.sleep(sleepMillis(timeoutNanos));
            } finally {
                wakeUp.asleep(false);
            }
            wakeUp.woke();
            cycle.runTimers();
            return 0;
        } finally {
            driver = null;
            IN_PASS.setRelease(this, 0);
        }
    }

    /** Rounded up: a sleep shorter than asked would make the driver's timer fire early. */
    private int sleepMillis(long timeoutNanos) {
        long ms = Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(timeoutNanos, Long.MAX_VALUE - 999_999) + 999_999));
        if (cycle.hasTimers()) {
            ms = Math.min(ms, DutyCycle.MAX_SLEEP_MS);   // the deadlines' checks
        }
        return (int) Math.min(Integer.MAX_VALUE, ms);
    }

    /** Runs what was handed over before the close, on the caller (or in the pass it closes from). */
    @Override
    void close() {
        running = false;
        if (driven) {
            wakeUp.signal();   // a driver asleep in awaitWork holds the pass: end its sleep
        }
        boolean reentered = driver == Thread.currentThread();   // close from a callback of a pass
        while (!reentered && !IN_PASS.compareAndSet(this, 0, 1)) {
            Thread.yield();   // another thread's pass: it ends soon
        }
        try {
            driver = Thread.currentThread();
            cycle.runTasks();
        } finally {
            if (!reentered) {
                driver = null;
                IN_PASS.setRelease(this, 0);
            }
        }
        wakeUp.close();
    }
}
