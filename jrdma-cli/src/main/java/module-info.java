/** The {@code jrdma} command: devices, perf and doctor. */
module dev.jrdma.cli {
    requires dev.jrdma;
    // PerftestComparison draws its plots (PNG) with Java2D; only the command needs it, not the library.
    requires java.desktop;
    // jrdma perf's warm-up watches the JIT's compilation time (CompilationMXBean) to know it settled.
    requires java.management;
    // The library logs through System.Logger; the command shows those records one line each.
    requires java.logging;
    // jrdma perf --jfr records the run with the Flight Recorder.
    requires jdk.jfr;
}
