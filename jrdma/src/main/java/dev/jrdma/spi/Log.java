package dev.jrdma.spi;

/**
 * jrdma's logger ({@code System.Logger} "dev.jrdma"), for the paths that handle failures: a log
 * call here never throws. Logging can fail (formatting a record opens files; out of fds it
 * throws an Error), and a failure path whose log throws would end the IO thread it protects.
 */
public final class Log {
    private static final System.Logger LOGGER = System.getLogger("dev.jrdma");

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
}
