package dev.jrdma;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/** The two Soft-RoCE ends (scripts/softroce-vm sets JRDMA_VM_*), or real NICs' (JRDMA_VERBS_*). */
final class VerbsTestAddresses {
    private static int nextPort = 9000 + (int) (ProcessHandle.current().pid() % 500) * 8;

    private VerbsTestAddresses() {
    }

    static String serverDevice() {
        return env("JRDMA_VERBS_SERVER_DEVICE", "JRDMA_VM_DEV0");
    }

    static String clientDevice() {
        return env("JRDMA_VERBS_CLIENT_DEVICE", "JRDMA_VM_DEV1");
    }

    static synchronized InetSocketAddress nextServerAddress() {
        return new InetSocketAddress(env("JRDMA_VERBS_SERVER_IP", "JRDMA_VM_IP0"), nextPort++);
    }

    /** The client device's IP address (JRDMA_VERBS_CLIENT_IP, or the VM's JRDMA_VM_IP1), port 0. */
    static InetSocketAddress clientAddress() {
        return new InetSocketAddress(env("JRDMA_VERBS_CLIENT_IP", "JRDMA_VM_IP1"), 0);
    }

    /**
     * An address on the server device's IPv6 RoCE v2 GID (JRDMA_VERBS_SERVER_IP6, or the VM's
     * JRDMA_VM_IP6_0), with a port of its own.
     */
    static synchronized InetSocketAddress nextServerAddress6() {
        String error = System.getenv("JRDMA_VM_IP6_ERROR");
        if (System.getenv("JRDMA_VERBS_SERVER_IP6") == null && error != null) {
            fail("the Soft-RoCE VM could not set up IPv6: " + error);
        }
        return new InetSocketAddress(env("JRDMA_VERBS_SERVER_IP6", "JRDMA_VM_IP6_0"), nextPort++);
    }

    /** A variable of the VM's four-device group (JRDMA_VM_GROUP_DEVS, JRDMA_VM_GROUP_IPS), set by softroce-vm --group 4. */
    static String groupEnv(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            org.junit.jupiter.api.Assertions.fail("the verbs suite needs " + name + " (set by scripts/softroce-vm --group 4):"
                    + " run it with scripts/verbs-suite");
        }
        return v;
    }

    private static String env(String name, String vmName) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            v = System.getenv(vmName);
        }
        if (v == null || v.isBlank()) {
            fail("the verbs suite needs " + name + " (or " + vmName + ", set by scripts/softroce-vm): run it with scripts/verbs-suite");
        }
        return v;
    }

    /**
     * The class path for a child JVM that runs test code: the library's classes and the tests'
     * (the JUnit console launcher loads them itself, so java.class.path does not have them).
     */
    static String childClassPath() {
        try {
            return java.nio.file.Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    + java.io.File.pathSeparator
                    + java.nio.file.Path.of(VerbsTestAddresses.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Runs {@code main}'s {@code main} in a child JVM on {@link #childClassPath}, its output into
     * {@code out}, and waits for it {@code seconds} at most (then kills it); the ended process.
     */
    static Process runChildJvm(Class<?> main, File out, long seconds) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", childClassPath(), main.getName())
                .redirectErrorStream(true).redirectOutput(out).start();
        if (!child.waitFor(seconds, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
        return child;
    }
}
