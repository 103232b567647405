package dev.jrdma.cli;

import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;

/**
 * How the {@code jrdma} command shows the library's log records: one line each, on stderr,
 * {@code jrdma: WARNING: message (cause)}, in System.Logger's level names, without the
 * timestamp and source lines of java.util.logging's default that would break up the command's
 * own output.
 */
final class OneLineLogFormat extends Formatter {
    @Override
    public String format(LogRecord r) {
        StringBuilder b = new StringBuilder("jrdma: ").append(levelName(r.getLevel())).append(": ").append(formatMessage(r));
        for (Throwable t = r.getThrown(); t != null; t = t.getCause()) {
            b.append(t == r.getThrown() ? " (" : "; caused by ").append(t);
        }
        if (r.getThrown() != null) {
            b.append(')');
        }
        return b.append(System.lineSeparator()).toString();
    }

    /** java.util.logging's level as System.Logger names it (the library logs through System.Logger). */
    static String levelName(Level level) {
        int v = level.intValue();
        return v >= Level.SEVERE.intValue() ? "ERROR" : v >= Level.WARNING.intValue() ? "WARNING"
                : v >= Level.INFO.intValue() ? "INFO" : v >= Level.FINE.intValue() ? "DEBUG" : "TRACE";
    }

    /** System.Logger's level name (as {@code --log} takes it) to java.util.logging's level. */
    static Level parse(String name) {
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "off" -> Level.OFF;
            case "error" -> Level.SEVERE;
            case "warning" -> Level.WARNING;
            case "info" -> Level.INFO;
            case "debug" -> Level.FINE;
            case "trace", "all" -> Level.ALL;
            default -> throw new IllegalArgumentException("--log takes off, error, warning, info, debug or trace, not '"
                    + name + "'");
        };
    }
}
