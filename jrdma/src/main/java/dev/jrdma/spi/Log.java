package dev.jrdma.spi;

/**
 * jrdma's logger ({@code System.Logger} "dev.jrdma"), for the paths that handle failures: a log
 * call here never throws. Logging can fail (formatting a record opens files; out of fds it
 * throws an Error), and a failure path whose log throws would end the IO thread it protects.
 */
public final class Log {
    private static final System.Logger LOGGER = System.getLogger("dev.jrdma");
    /** For {@link #limited}: per kind of line, when it was last logged and how many were left out since. */
    private static final java.util.concurrent.ConcurrentHashMap<String, long[]> LIMITED = new java.util.concurrent.ConcurrentHashMap<>();
    static final long LIMIT_NANOS = 10_000_000_000L;

    private Log() {
    }

    /** Logs {@code message} and {@code thrown} (may be null) at {@code level}; a failure to log is dropped. */
    public static void quietly(System.Logger.Level level, String message, Throwable thrown) {
        try {
            if (thrown == null) {
                LOGGER.log(level, message);
            } else {
                LOGGER.log(level, message, thrown);
            }
        } catch (Throwable ignored) {
            // Nothing to report it to: the logger is what failed.
        }
    }

    /** Forgets when each kind of {@link #limited} line was last logged: for tests that await one such line each. */
    public static void forgetLimits() {
        LIMITED.clear();
    }

    /**
     * {@link #quietly} for a line a peer can cause as often as it likes (one per handshake it
     * sends): at most one line of this {@code kind} (a constant) every 10 s, saying how many
     * were left out before it. Returns whether it was logged.
     */
    public static boolean limited(String kind, System.Logger.Level level, String message) {
        long[] state = LIMITED.computeIfAbsent(kind, k -> new long[] {System.nanoTime() - LIMIT_NANOS - 1, 0});
        long now = System.nanoTime();
        long skipped;
        synchronized (state) {
            if (now - state[0] <= LIMIT_NANOS) {
                state[1]++;
                return false;
            }
            state[0] = now;
            skipped = state[1];
            state[1] = 0;
        }
        quietly(level, skipped == 0 ? message : message + " (and " + skipped + " more like it in the last 10 s)", null);
        return true;
    }
}
