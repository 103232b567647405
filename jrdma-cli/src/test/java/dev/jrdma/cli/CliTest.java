package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import org.junit.jupiter.api.Test;

/** The command's manners: help, version, exit codes, one prefix per message, one line per log record. */
class CliTest {
    private static CommandRun run(String... args) {
        return CommandRun.of(args);
    }

    @Test
    void everyCommandsHelpIsExitZeroOnStdout() {
        for (List<String> args : List.of(List.of("--help"), List.of("-h"), List.of("help"), List.of("devices", "--help"),
                List.of("devices", "-h"), List.of("perf", "--help"), List.of("perf", "-h"), List.of("perf", "write_lat", "--help"),
                List.of("doctor", "--help"), List.of("doctor", "-h"))) {
            CommandRun r = run(args.toArray(String[]::new));
            assertEquals(0, r.code(), args + ": " + r.err());
            assertTrue(r.out().startsWith("usage: jrdma"), args + ": " + r.out());
            assertEquals("", r.err(), args.toString());
        }
    }

    @Test
    void versionComesFromTheBuild() {
        String expected = System.getProperty("jrdma.expectedVersion");
        assertNotNull(expected, "the pom passes the project's version");
        for (String flag : List.of("--version", "-V", "version")) {
            CommandRun r = run(flag);
            assertEquals(0, r.code(), r.err());
            assertTrue(r.out().startsWith("jrdma " + expected + " (library " + expected + ", Java " + Runtime.version() + ")"),
                    r.out());
        }
    }

    @Test
    void aBadLogLevelIsAUsageError() {
        CommandRun bad = run("--log", "loud", "devices");
        assertEquals(2, bad.code());
        assertEquals("jrdma: --log takes off, error, warning, info, debug or trace, not 'loud'\n", bad.err());
        CommandRun missing = run("--log");
        assertEquals(2, missing.code());
        assertTrue(missing.err().startsWith("jrdma: --log needs a level"), missing.err());
        CommandRun noCommand = run("--log", "info");
        assertEquals(2, noCommand.code());
        assertTrue(noCommand.err().startsWith("usage: jrdma"), noCommand.err());
    }

    @Test
    void aLogRecordIsOneLineWithItsCause() {
        OneLineLogFormat f = new OneLineLogFormat();
        LogRecord r = new LogRecord(Level.WARNING, "tcp QP {0}: the peer is silent");
        r.setParameters(new Object[] {7});
        r.setThrown(new IllegalStateException("outer", new java.io.IOException("inner")));
        assertEquals("jrdma: WARNING: tcp QP 7: the peer is silent (java.lang.IllegalStateException: outer; caused by "
                + "java.io.IOException: inner)" + System.lineSeparator(), f.format(r));
        assertEquals("jrdma: DEBUG: x" + System.lineSeparator(), f.format(new LogRecord(Level.FINE, "x")));
        assertEquals("ERROR", OneLineLogFormat.levelName(Level.SEVERE));
        assertEquals("TRACE", OneLineLogFormat.levelName(Level.FINEST));
    }

    /** In a JVM of its own, as a user runs it: the library's records through the command's format, from --log's level. */
    @Test
    void theLibrarysLogRecordsAreOneLineAndQuietByDefault() throws Exception {
        String debug = child("--log", "debug", "devices");
        assertTrue(debug.lines().anyMatch(l -> l.startsWith("jrdma: DEBUG: jrdma chose the auto: ")), debug);
        assertFalse(debug.lines().anyMatch(l -> l.matches("^[A-Z][a-z]{2} \\d{1,2}, \\d{4} .*")),
                "no java.util.logging header lines:\n" + debug);
        String quiet = child("devices");
        assertFalse(quiet.contains("jrdma chose"), quiet);
        assertTrue(quiet.contains("Providers:"), quiet);
    }

    private static String child(String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new java.util.ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
