package dev.jrdma;

import java.io.File;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/**
 * System commands for the verbs tests ({@code ip}, {@code tc}, {@code rdma}), each bounded in
 * time. Plain Java, no JUnit: the child JVMs of the device tests run it too.
 */
final class Shell {
    private Shell() {
    }

    /** Runs {@code cmd} for at most {@code seconds}; null when it exited 0, else why not with its output. */
    static String tryRun(long seconds, String... cmd) throws Exception {
        File log = File.createTempFile("shell", ".log");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "did not end within " + seconds + " s";
            }
            return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + Files.readString(log.toPath()).strip();
        } finally {
            log.delete();
        }
    }

    /** Runs {@code cmd} (30 s at most); throws naming the command and its output when it fails. */
    static void run(String... cmd) throws Exception {
        String out = tryRun(30, cmd);
        if (out != null) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
        }
    }

    /** What {@code cmd} printed (30 s at most), for a report or a diagnosis; the failure if it failed. */
    static String output(String... cmd) throws Exception {
        File log = File.createTempFile("shell", ".log");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return String.join(" ", cmd) + ": did not end within 30 s";
            }
            return Files.readString(log.toPath()).strip();
        } finally {
            log.delete();
        }
    }
}
