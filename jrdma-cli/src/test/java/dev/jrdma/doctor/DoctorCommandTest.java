package dev.jrdma.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** {@code jrdma doctor} on this machine, whatever it has: every check answers, with this JVM's own facts. */
class DoctorCommandTest {
    record Run(int code, String out, String err) {
    }

    static Run doctor(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int code = DoctorCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void checksThisMachine() throws Exception {
        Run r = doctor();
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("[ok  ] JDK: " + Runtime.version()), r.out());
        assertTrue(r.out().contains("native access: " + (DoctorCommandTest.class.getModule().isNativeAccessEnabled()
                ? "enabled" : "not enabled")), r.out());
        // The memlock line states this process's limit, as the kernel reports it.
        long soft = EnvironmentFacts.memlockSoft(Files.readString(Path.of("/proc/self/limits")));
        String status = Files.readString(Path.of("/proc/self/status"));
        if (EnvironmentFacts.capability(status, 14)) {
            assertTrue(r.out().contains("memlock: CAP_IPC_LOCK is effective"), r.out());
        } else if (soft == -1) {
            assertTrue(r.out().contains("memlock: RLIMIT_MEMLOCK is unlimited"), r.out());
        } else {
            assertTrue(r.out().contains("memlock: RLIMIT_MEMLOCK is "), r.out());
        }
        assertTrue(r.out().contains("the default provider, auto, chooses "), r.out());
        assertTrue(r.out().strip().matches("(?s).*\\n\\d+ checks: 0 failed, \\d+ warnings;.*"), r.out());
    }

    /** Through the jrdma command, in a JVM started without --enable-native-access: doctor says so and how to fix it. */
    @Test
    void theCommandSaysWhenNativeAccessIsNotEnabled() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "dev.jrdma.cli.Main", "doctor")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("[warn] native access: not enabled for jrdma"), out);
        assertTrue(out.contains("fix: run java with --enable-native-access=ALL-UNNAMED"), out);
    }

    @Test
    void optionsAreRefused() {
        Run r = doctor("--fix-it");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("jrdma doctor: it takes no options, not --fix-it"), r.err());
        assertEquals(0, doctor("--help").code());
    }
}
