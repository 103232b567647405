/** The {@code jrdma} command: devices, perf (and later doctor, examples). */
module dev.jrdma.cli {
    requires dev.jrdma;
    // PerftestComparison draws its plots (PNG) with Java2D; only the command needs it, not the library.
    requires java.desktop;
    uses dev.jrdma.spi.Provider;
}
