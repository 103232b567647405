package dev.jrdma.runtime;

/**
 * What an {@link IoThread} of its own does when it finds no work: the runtime's side of the
 * public {@code IdleStrategy} and {@code CompletionMode}, which the API maps onto it (the runtime
 * sits below the API and cannot name them). A value; each loop makes its own {@link IdleStrategy}
 * from it ({@link #newStrategy}), since a strategy counts its idle passes.
 *
 * @param kind      which strategy
 * @param spinNanos {@link Kind#SPIN_THEN_SLEEP}: how long it spins after the last work
 * @param spins     {@link Kind#BACKOFF}: idle passes spun before it yields
 * @param yields    {@link Kind#BACKOFF}: idle passes yielded before it sleeps
 */
public record IdleWait(Kind kind, long spinNanos, int spins, int yields) {
    /** The strategies. */
    public enum Kind {
        /** Keep polling, yielding now and then ({@link BusySpinIdle}). */
        SPIN,
        /** Keep polling, yielding the CPU after every idle pass ({@link YieldingIdle}). */
        YIELD,
        /** Sleep on the event fds at once, the completion queues armed ({@link SleepingIdle}). */
        SLEEP,
        /** Spin for a time after the last work, then sleep ({@link SpinThenSleepIdle}). */
        SPIN_THEN_SLEEP,
        /** Spin, then yield, each for a count of idle passes, then sleep ({@link BackoffIdle}). */
        BACKOFF
    }

    /** Keep polling (yielding now and then): the lowest latency, one core per IO thread. */
    public static final IdleWait SPIN = new IdleWait(Kind.SPIN, 0, 0, 0);
    /** Sleep on the event file descriptors at once, the completion queues armed. */
    public static final IdleWait SLEEP = new IdleWait(Kind.SLEEP, 0, 0, 0);
    /** Spin for a short budget (50 us) after the last work, then sleep as {@link #SLEEP}. */
    public static final IdleWait SPIN_THEN_SLEEP = new IdleWait(Kind.SPIN_THEN_SLEEP, SpinThenSleepIdle.SPIN_NANOS, 0, 0);
    /** Keep polling, yielding after every idle pass. */
    public static final IdleWait YIELD = new IdleWait(Kind.YIELD, 0, 0, 0);

    public IdleWait {
        if (spinNanos < 0 || spins < 0 || yields < 0) {
            throw new IllegalArgumentException("negative idle budget: " + spinNanos + " ns, " + spins + " spins, "
                    + yields + " yields");
        }
    }

    /** Spin for {@code nanos} after the last work, then sleep. */
    public static IdleWait spinThenSleep(long nanos) {
        return new IdleWait(Kind.SPIN_THEN_SLEEP, nanos, 0, 0);
    }

    /** Spin {@code spins} idle passes, yield {@code yields} more, then sleep. */
    public static IdleWait backoff(int spins, int yields) {
        return new IdleWait(Kind.BACKOFF, 0, spins, yields);
    }

    /** Whether a loop idling so ever sleeps on its event fds (then its completion queues must be armed). */
    public boolean sleeps() {
        return kind == Kind.SLEEP || kind == Kind.SPIN_THEN_SLEEP || kind == Kind.BACKOFF;
    }

    /** A new strategy of this kind, for one loop. */
    IdleStrategy newStrategy() {
        return switch (kind) {
            case SPIN -> new BusySpinIdle();
            case YIELD -> new YieldingIdle();
            case SLEEP -> new SleepingIdle();
            case SPIN_THEN_SLEEP -> new SpinThenSleepIdle(spinNanos);
            case BACKOFF -> new BackoffIdle(spins, yields);
        };
    }
}
