/** The {@code jrdma} command: devices (and later perf, doctor, examples). */
module dev.jrdma.cli {
    requires dev.jrdma;
    uses dev.jrdma.spi.Provider;
}
