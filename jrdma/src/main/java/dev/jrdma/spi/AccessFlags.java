package dev.jrdma.spi;

/** Memory access bits, the values of {@code enum ibv_access_flags} (every provider uses these). */
public final class AccessFlags {
    public static final int LOCAL_WRITE = 1, REMOTE_WRITE = 1 << 1, REMOTE_READ = 1 << 2, REMOTE_ATOMIC = 1 << 3;
    /** {@code IBV_ACCESS_MW_BIND}: memory windows may be bound over the registration. */
    public static final int MW_BIND = 1 << 4;
    /** The rights a peer can be given. */
    public static final int REMOTE_MASK = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

    private AccessFlags() {
    }

    /** "LOCAL_WRITE|REMOTE_READ" for messages. */
    public static String names(int access) {
        StringBuilder sb = new StringBuilder();
        String[] names = {"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC"};
        for (int i = 0; i < names.length; i++) {
            if ((access & (1 << i)) != 0) {
                sb.append(sb.isEmpty() ? "" : "|").append(names[i]);
            }
        }
        return sb.isEmpty() ? "none" : sb.toString();
    }
}
