package dev.jrdma.runtime;

import dev.jrdma.spi.Log;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * An IO loop's work, as Agrona's {@code Agent.doWork}: one {@link #pass} runs the tasks handed to
 * the loop, takes woken sources back, and polls every source that is not resting, and says how
 * much it did; what to do with a pass that did nothing is the {@link IdleStrategy}'s, and on which
 * thread passes run is the runner's ({@link ThreadRunner}) or the invoker's ({@link CallerInvoker}).
 *
 * <p>Threads: everything here is the loop owner's (the thread in a pass), except {@link #handOff}
 * and {@link #wokenElsewhere}, which any thread may call: they go through {@link HandOffQueue}s.
 */
final class DutyCycle {
    /** The longest sleep: timed checks (deadlines) run at least this often. */
    static final int MAX_SLEEP_MS = 50;
    private static final long TIMER_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(MAX_SLEEP_MS);

    private final String name;
    /** Tasks from other threads. */
    private final HandOffQueue<Runnable> handedOff = new HandOffQueue<>();
    /** Tasks the owner queued for after what it runs now ({@link IoThread#executeLater} on the loop). */
    private final ArrayDeque<Runnable> later = new ArrayDeque<>();
    /**
     * The sources polled every pass, those not resting: {@code polled[0..polledCount)}, and beside
     * each whether it may rest ({@link IoThread.Source#mayRest}, asked once when it came), so that
     * a pass asks {@link IoThread.Source#rest} only of those that can say yes. Arrays, not a list:
     * a pass is the loop's hottest code, and a spinning loop's passes are mostly empty.
     */
    private IoThread.Source[] polled = new IoThread.Source[8];
    private boolean[] mayRest = new boolean[8];
    private int polledCount;
    /** The sources at rest ({@link IoThread.Source#rest}): not polled until they are woken. */
    private final Set<IoThread.Source> resting = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Resting sources woken from other threads, taken back into the passes at the start of the next one. */
    private final HandOffQueue<IoThread.Source> woken = new HandOffQueue<>();
    private final List<IntSupplier> timers = new ArrayList<>();
    private long timersRan;
    private int idlePasses;
    private int busyPasses;
    private long sourceFailures;

    DutyCycle(String name) {
        this.name = name;
    }

    String name() {
        return name;
    }

    /**
     * One pass: tasks, woken sources, then every source; returns the work done.
     *
     * @param barrier whether a source that throws is failed and the pass goes on (a loop of its
     *                own, a driven one) or the throwable reaches the caller (plain inline)
     */
    int pass(boolean barrier) {
        int work = runTasks() + admitWoken();
        for (int i = 0; i < polledCount; i++) {
            IoThread.Source s = polled[i];
            int w = barrier ? pollBarrier(s) : s.poll();
            if (w == 0 && mayRest[i] && restBarrier(s)) {
                i = restAt(i);
            }
            work += w;
        }
        return work;
    }

    /**
     * The look before a sleep, after {@link #armSources}: whether anything is queued, or any source
     * has work (a completion may have come before the arm). Stops at the first that has.
     */
    int lookBeforeSleep() {
        int again = hasQueued() ? 1 : 0;
        for (int i = 0; i < polledCount && again == 0; i++) {
            again += pollBarrier(polled[i]);
        }
        return again;
    }

    /** A driven loop's look before its sleep: tasks, woken sources and every source, behind the barrier. */
    int lookAll() {
        int work = runTasks() + admitWoken();
        for (int i = 0; i < polledCount; i++) {
            work += pollBarrier(polled[i]);
        }
        return work;
    }

    /** Whether tasks or woken sources wait for the next pass. The owner only. */
    boolean hasQueued() {
        return !later.isEmpty() || !handedOff.isEmpty() || !woken.isEmpty();
    }

    /** From another thread: runs {@code task} in a coming pass. */
    void handOff(Runnable task) {
        handedOff.offer(task);
    }

    /** On the loop: runs {@code task} in the next pass, after what runs now. */
    void runLater(Runnable task) {
        later.add(task);
    }

    /**
     * Runs the queued tasks until none is left, those queued while they run included: first the
     * owner's (queued in earlier passes, so older than anything it handed off between passes),
     * then the handed-off ones, as long as either has any.
     */
    int runTasks() {
        if (later.isEmpty() && handedOff.isEmpty()) {
            return 0;   // the common case of a spinning loop: two looks, no polls
        }
        int n = 0;
        Runnable r;
        do {
            while ((r = later.poll()) != null) {
                n++;
                runBarrier(r);
            }
            while ((r = handedOff.poll()) != null) {
                n++;
                runBarrier(r);
            }
        } while (!later.isEmpty());
        return n;
    }

    private void runBarrier(Runnable r) {
        try {
            r.run();
        } catch (Throwable t) {
            Log.quietly(System.Logger.Level.ERROR, name + ": a task failed", t);
        }
    }

    /** Adds a source; the owner only. */
    void add(IoThread.Source source) {
        addPolled(source);
    }

    /** Removes a source, polled or resting; the owner only. */
    void remove(IoThread.Source source) {
        int i = indexOfPolled(source);
        if (i >= 0) {
            removePolledAt(i);
        } else {
            resting.remove(source);
        }
    }

    /** On the loop: a resting source has work; it is polled later in this pass (a pass runs up to polledCount, read each step). */
    void wokenHere(IoThread.Source source) {
        if (resting.remove(source)) {
            addPolled(source);
        }
    }

    /** From another thread: a resting source has work; it is taken back at the next pass. */
    void wokenElsewhere(IoThread.Source source) {
        woken.offer(source);
    }

    /** Takes the woken sources back into the passes; returns how many (work: the pass must not idle). */
    private int admitWoken() {
        if (woken.isEmpty()) {
            return 0;
        }
        int n = 0;
        IoThread.Source s;
        while ((s = woken.poll()) != null) {
            if (resting.remove(s)) {
                addPolled(s);
                n++;
            }
        }
        return n;
    }

    /** Asks {@code s} whether it rests, behind the exception barrier (a throw fails it, and it does not rest). */
    private boolean restBarrier(IoThread.Source s) {
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
        IoThread.Source s = polled[i];
        removePolledAt(i);
        resting.add(s);
        return i - 1;
    }

    private void addPolled(IoThread.Source source) {
        if (polledCount == polled.length) {
            polled = Arrays.copyOf(polled, polledCount * 2);
            mayRest = Arrays.copyOf(mayRest, polledCount * 2);
        }
        polled[polledCount] = source;
        mayRest[polledCount] = source.mayRest();
        polledCount++;
    }

    private int indexOfPolled(IoThread.Source source) {
        for (int i = 0; i < polledCount; i++) {
            if (polled[i] == source) {
                return i;
            }
        }
        return -1;
    }

    /** The last polled source takes place {@code i} (the order of sources is no promise). */
    private void removePolledAt(int i) {
        int last = --polledCount;
        polled[i] = polled[last];
        mayRest[i] = mayRest[last];
        polled[last] = null;
    }

    /** Asks every source for an event at its next completion (before a sleep). */
    void armSources() {
        for (int i = 0; i < polledCount; i++) {
            IoThread.Source source = polled[i];
            try {
                source.arm();
            } catch (Throwable t) {
                sourceFailed(source, t);
            }
        }
    }

    /** Sources polled every pass now, and those at rest: for tests and diagnostics. */
    int[] sourceCounts() {
        return new int[] {polledCount, resting.size()};
    }

    /** A check run after every sleep, every 1024 idle passes, and at least every {@value #MAX_SLEEP_MS} ms when busy. */
    void addTimer(IntSupplier timer) {
        timers.add(timer);
    }

    boolean hasTimers() {
        return !timers.isEmpty();
    }

    void runTimers() {
        timersRan = System.nanoTime();
        for (int i = 0; i < timers.size(); i++) {
            timers.get(i).getAsInt();
        }
    }

    /**
     * After a pass: every 1024 idle passes the timers run (not a clock read per empty pass), and
     * every 1024 busy ones when {@value #MAX_SLEEP_MS} ms have gone by since they last ran (a loop
     * that never idles runs them too).
     *
     * @param consecutive whether only consecutive idle passes count (a loop of its own, where
     *                    work starts the count again) or all of them (an inline loop, whose
     *                    caller may poll once a while between its own work)
     */
    void afterPass(int work, boolean consecutive) {
        if (work > 0) {
            if (consecutive) {
                idlePasses = 0;
            }
            if ((++busyPasses & 1023) == 0 && !timers.isEmpty() && System.nanoTime() - timersRan >= TIMER_PERIOD_NANOS) {
                runTimers();
            }
        } else if ((++idlePasses & 1023) == 0) {
            runTimers();
        }
    }

    /** After a sleep: the timers run, and the idle count starts again. */
    void afterSleep() {
        runTimers();
        idlePasses = 0;
    }

    /**
     * Polls a source behind the exception barrier: a throwable fails that source (it ends its
     * connection, see {@link IoThread.Source#failed}) and is logged, and the loop goes on with the
     * others. Logged at 1, 2, 4, 8... failures, so a source that keeps failing cannot flood the log.
     */
    private int pollBarrier(IoThread.Source source) {
        try {
            return source.poll();
        } catch (Throwable t) {
            sourceFailed(source, t);
            return 0;
        }
    }

    private void sourceFailed(IoThread.Source source, Throwable t) {
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
}
