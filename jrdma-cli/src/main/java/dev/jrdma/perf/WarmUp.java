package dev.jrdma.perf;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.util.function.IntToDoubleFunction;

/**
 * How a size was warmed up before its timed run: untimed rounds of the test, until the figure
 * (the typical latency, or the average bandwidth) settles. A round counts as settled when it
 * differs from the one before by at most {@link #SETTLED} and the JIT compiled nothing during
 * it, after at least {@link #MIN_NANOS} and {@link #MIN_ITERATIONS} for the first size of a run
 * (later sizes run code the JIT has compiled already); at most {@link #MAX_NANOS}.
 * The JIT's own clock is what makes this work on an emulated CPU, where a method runs
 * interpreted for seconds at a steady, slow pace before C2 finishes with it. With
 * {@code --warmup N}, N iterations instead (0: none).
 *
 * @param iterations untimed iterations run
 * @param nanos      how long they took
 * @param settled    the figure settled (false: the time ran out, or a count was given)
 * @param counted    a count was given ({@code --warmup N})
 */
record WarmUp(long iterations, long nanos, boolean settled, boolean counted) {
    static final double SETTLED = 0.05;
    static final long MIN_NANOS = 1_000_000_000L, MAX_NANOS = 60_000_000_000L;
    static final int MIN_ITERATIONS = 5_000;

    /**
     * Runs {@code count} untimed iterations in rounds of at most {@code roundSize}, as the timed
     * run is one: in one long round the JIT compiles the path for what that round alone does, and
     * the control messages around the timed run then throw the compiled provider code away (seen:
     * 200 000 iterations in one round left the timed 1 000 at 0.49 us, where they take 0.19).
     */
    static WarmUp counted(int count, int roundSize, IntToDoubleFunction round) {
        long t0 = System.nanoTime();
        for (int left = count; left > 0; left -= roundSize) {
            round.applyAsDouble(Math.min(left, roundSize));
        }
        return new WarmUp(count, System.nanoTime() - t0, false, true);
    }

    /**
     * Rounds of {@code roundSize} iterations ({@code round} runs one and returns its figure) until
     * it settles; {@code first}: the run's first size, which also waits the minimums.
     */
    static WarmUp untilSettled(int roundSize, boolean first, IntToDoubleFunction round) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean jitClock = jit != null && jit.isCompilationTimeMonitoringSupported();
        long t0 = System.nanoTime(), iterations = 0;
        double previous = Double.NaN;
        while (true) {
            long compiledBefore = jitClock ? jit.getTotalCompilationTime() : 0;
            double figure = round.applyAsDouble(roundSize);
            iterations += roundSize;
            boolean jitQuiet = !jitClock || jit.getTotalCompilationTime() == compiledBefore;
            long elapsed = System.nanoTime() - t0;
            boolean steady = previous > 0 && Math.abs(figure - previous) <= SETTLED * previous;
            if (steady && jitQuiet && (!first || elapsed >= MIN_NANOS && iterations >= MIN_ITERATIONS)) {
                return new WarmUp(iterations, elapsed, true, false);
            }
            if (elapsed >= MAX_NANOS) {
                return new WarmUp(iterations, elapsed, false, false);
            }
            previous = figure;
        }
    }

    /** For the report: "4.1 s, 22 000 iterations, settled" and the like. */
    String describe() {
        String what = String.format(Locale.ROOT, "%.1f s, %s iterations", nanos / 1e9,
                String.format(Locale.ROOT, "%,d", iterations).replace(',', ' '));
        if (counted) {
            return what + " (--warmup)";
        }
        return what + (settled ? ", settled" : ", NOT settled within " + MAX_NANOS / 1_000_000_000L + " s");
    }
}
