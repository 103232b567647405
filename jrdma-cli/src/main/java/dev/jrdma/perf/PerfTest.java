package dev.jrdma.perf;

/** The tests of {@code jrdma perf}, named as perftest's programs are ({@code ib_write_lat} is {@code write_lat}). */
public enum PerfTest {
    WRITE_LAT, READ_LAT, SEND_LAT, ATOMIC_LAT, WRITE_BW, READ_BW, SEND_BW, ATOMIC_BW;

    /** perftest's name without the {@code ib_} prefix. */
    public String perftestName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public boolean latency() {
        return name().endsWith("_LAT");
    }

    public boolean atomic() {
        return this == ATOMIC_LAT || this == ATOMIC_BW;
    }

    public boolean send() {
        return this == SEND_LAT || this == SEND_BW;
    }

    /**
     * Ping-pong tests (write_lat, send_lat) time a round trip and report half of it, as perftest
     * does; read and atomic latency are the whole operation.
     */
    public boolean pingPong() {
        return this == WRITE_LAT || this == SEND_LAT;
    }

    /** The test called {@code name} (write_lat, ...). */
    public static PerfTest of(String name) {
        for (PerfTest t : values()) {
            if (t.perftestName().equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown test '" + name + "': one of write_lat, read_lat, send_lat, atomic_lat,"
                + " write_bw, read_bw, send_bw, atomic_bw");
    }
}
