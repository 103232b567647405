package dev.jrdma.perf;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.text.ParseException;

import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * {@code jrdma perf --jfr FILE}: a Flight Recorder recording of this process for the run, with
 * the JVM's default settings and every jrdma event, the sampled operation latency included
 * (off by default in other recordings). Written to the file when the run ends, failed or not.
 */
final class PerfRecording implements AutoCloseable {
    private final Recording recording;
    private final Path file;
    private final PrintStream err;

    private PerfRecording(Recording recording, Path file, PrintStream err) {
        this.recording = recording;
        this.file = file;
        this.err = err;
    }

    /** A started recording into {@code file}; null (nothing to close) when {@code file} is null. */
    static PerfRecording start(String file, PrintStream err) throws IOException {
        if (file == null) {
            return null;
        }
        Recording r;
        try {
            r = new Recording(Configuration.getConfiguration("default"));
        } catch (ParseException e) {
            throw new IOException("the JDK's default JFR configuration: " + e.getMessage(), e);
        }
        for (String event : new String[] {"ConnectionEstablished", "ConnectionClosed", "ConnectionFailed", "RegionRegistered",
            "RegionExposed", "RegionRevoked", "LeaseEnded", "RetryExceeded", "OperationLatency"}) {
            r.enable("dev.jrdma." + event);
        }
        Path path = Path.of(file).toAbsolutePath();
        r.setName("jrdma perf");
        r.start();
        return new PerfRecording(r, path, err);
    }

    @Override
    public void close() throws IOException {
        try {
            recording.stop();
            recording.dump(file);
            err.println("jrdma perf: JFR recording written to " + file);
        } finally {
            recording.close();
        }
    }
}
