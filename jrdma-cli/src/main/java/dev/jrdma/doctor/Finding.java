package dev.jrdma.doctor;

/**
 * One line of {@code jrdma doctor}'s answer: what was checked, what was found, and what to do
 * about it (empty when nothing).
 */
public record Finding(Level level, String topic, String found, String fix) {
    /** FAIL: jrdma cannot run; WARN: a feature or real RDMA is unavailable; INFO: worth knowing. */
    public enum Level {
        OK("ok"), INFO("info"), WARN("warn"), FAIL("FAIL");

        private final String tag;

        Level(String tag) {
            this.tag = tag;
        }

        public String tag() {
            return tag;
        }
    }

    public Finding {
        fix = fix == null ? "" : fix;
    }

    static Finding ok(String topic, String found) {
        return new Finding(Level.OK, topic, found, "");
    }
}
