package dev.jrdma;

import dev.jrdma.runtime.IdleWait;

import java.time.Duration;
import java.util.Objects;

/**
 * What an IO thread of its own does after a pass that found no work, as Agrona's idle strategies:
 * spin, yield, back off, or sleep until a completion. Chosen with
 * {@link Rdma.Builder#idleStrategy}; without one, the {@link CompletionMode} says
 * ({@code POLLING}: {@link #busySpin()}, {@code EVENT}: {@link #sleeping()}, {@code ADAPTIVE}:
 * {@link #spinThenSleep} for 50 us).
 *
 * <p>Spinning is right on a core the loop has to itself and wrong on a shared one, where it takes
 * the CPU from the threads it waits for. The strategies that sleep do so on the IO thread's
 * completion channel with its completion queues armed, so a completion wakes it at once: the
 * sleep costs the wake-up (a few microseconds), not a timer's period. For the application's own
 * polling ({@link Rdma#INLINE}, {@link IoLoop}) there is no IO thread to idle, and the builder
 * refuses a strategy.
 *
 * <p>An immutable value; each IO thread makes its own counters from it.
 */
public final class IdleStrategy {
    private static final IdleStrategy BUSY_SPIN = new IdleStrategy(IdleWait.SPIN, "busySpin()");
    private static final IdleStrategy YIELDING = new IdleStrategy(IdleWait.YIELD, "yielding()");
    private static final IdleStrategy SLEEPING = new IdleStrategy(IdleWait.SLEEP, "sleeping()");
    private static final IdleStrategy ADAPTIVE = new IdleStrategy(IdleWait.SPIN_THEN_SLEEP,
            "spinThenSleep(" + Duration.ofNanos(IdleWait.SPIN_THEN_SLEEP.spinNanos()) + ")");

    private final IdleWait wait;
    private final String text;

    private IdleStrategy(IdleWait wait, String text) {
        this.wait = wait;
        this.text = text;
    }

    /**
     * Keeps polling ({@code Thread.onSpinWait}), yielding once every 64 idle passes: the lowest
     * latency, a core per IO thread.
     *
     * @return the strategy
     */
    public static IdleStrategy busySpin() {
        return BUSY_SPIN;
    }

    /**
     * Keeps polling and yields the CPU after every idle pass: close to a busy spin on a core of
     * its own, and it lets other runnable threads of a shared core run at once.
     *
     * @return the strategy
     */
    public static IdleStrategy yielding() {
        return YIELDING;
    }

    /**
     * Sleeps at the first idle pass until a completion, a connection event or a task (and at
     * least every 50 ms, for the timers): no CPU while idle, a wake-up's latency on each
     * completion that finds it asleep.
     *
     * @return the strategy
     */
    public static IdleStrategy sleeping() {
        return SLEEPING;
    }

    /**
     * Spins for {@code spin} after the last work, then sleeps as {@link #sleeping()}: ADAPTIVE's
     * strategy with a budget of one's own (ADAPTIVE spins 50 us).
     *
     * @param spin how long to spin after the last work; zero or positive
     * @return the strategy
     * @throws IllegalArgumentException when {@code spin} is negative
     */
    public static IdleStrategy spinThenSleep(Duration spin) {
        Objects.requireNonNull(spin, "spin");
        if (spin.isNegative()) {
            throw new IllegalArgumentException("spinThenSleep: the spin must be zero or positive, not " + spin);
        }
        return new IdleStrategy(IdleWait.spinThenSleep(spin.toNanos()), "spinThenSleep(" + spin + ")");
    }

    /**
     * Backs off as Agrona's {@code BackoffIdleStrategy}: spins for {@code spins} idle passes after
     * the last work, yields for {@code yields} more, then sleeps as {@link #sleeping()} (where
     * Agrona parks, which a completion cannot end). Counted in passes: no clock read while idle.
     *
     * @param spins  idle passes spun; zero or more
     * @param yields idle passes yielded after those; zero or more
     * @return the strategy
     * @throws IllegalArgumentException when a count is negative
     */
    public static IdleStrategy backoff(int spins, int yields) {
        if (spins < 0 || yields < 0) {
            throw new IllegalArgumentException("backoff: the counts must be zero or more, not " + spins + " spins and "
                    + yields + " yields");
        }
        return new IdleStrategy(IdleWait.backoff(spins, yields), "backoff(" + spins + ", " + yields + ")");
    }

    /**
     * What IO threads of their own idle as: {@code chosen}, or else what {@code mode} implies.
     * Refused where no IO thread idles ({@code inline}, or {@code ioLoops}).
     */
    static IdleWait forIoThreads(IdleStrategy chosen, CompletionMode mode, boolean inline, int ioLoops) {
        if (chosen != null && (inline || ioLoops > 0)) {
            throw new IllegalArgumentException("idleStrategy(" + chosen + ") is for IO threads of their own, and "
                    + (ioLoops > 0 ? "this Rdma has " + ioLoops + " IO loops (ioLoops)" : "this Rdma is INLINE (ioThreads(0))")
                    + ": the application's threads poll, and idle as they choose");
        }
        return (chosen != null ? chosen : of(mode)).idleWait();
    }

    /** The strategy a completion mode implies. */
    static IdleStrategy of(CompletionMode mode) {
        return switch (mode) {
            case POLLING -> BUSY_SPIN;
            case EVENT -> SLEEPING;
            case ADAPTIVE -> ADAPTIVE;
        };
    }

    /** The runtime's form of this strategy. */
    IdleWait idleWait() {
        return wait;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdleStrategy s && s.wait.equals(wait);
    }

    @Override
    public int hashCode() {
        return wait.hashCode();
    }

    @Override
    public String toString() {
        return "IdleStrategy." + text;
    }
}
