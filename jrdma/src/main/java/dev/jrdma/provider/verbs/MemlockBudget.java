package dev.jrdma.provider.verbs;

import dev.jrdma.exceptions.NativeRdmaException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.Errno;
import dev.jrdma.os.LibC;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much memory this process may still pin for registrations: RLIMIT_MEMLOCK less what is
 * pinned (VmPin) and locked (VmLck) already, unless it has CAP_IPC_LOCK (then the kernel does
 * not count). A registration over the limit fails in the kernel with ENOMEM, which says
 * nothing about the cause; this says which limit, how far it is used, and how to raise it.
 */
final class MemlockBudget {
    private static final int CAP_IPC_LOCK = 14;

    private MemlockBudget() {
    }

    /** Bytes that may still be pinned; Long.MAX_VALUE when nothing limits it. */
    static long available() {
        if (hasIpcLock()) {
            return Long.MAX_VALUE;
        }
        long soft = LibC.memlockLimit()[0];
        if (soft < 0) {
            return Long.MAX_VALUE;
        }
        return Math.max(0, soft - pinnedBytes());
    }

    /**
     * Refuses a budget of {@code bytes} (Rdma.Builder.memoryBudget) that the limit cannot hold,
     * before anything is registered.
     */
    static void check(String device, long bytes) {
        long left = available();
        if (bytes > left) {
            throw new RdmaException("a memory budget of " + bytes + " bytes on " + device + " does not fit: " + state()
                    + ", so only " + left + " more bytes can be registered. " + advice());
        }
    }

    /** {@code e} from ibv_reg_mr of {@code bytes}, explained when it is the memlock limit (ENOMEM with a finite limit). */
    static RuntimeException explain(NativeRdmaException e, long bytes) {
        if (e.errno() != Errno.ENOMEM || available() == Long.MAX_VALUE) {
            return e;
        }
        return new RdmaException("registering " + bytes + " bytes failed with ENOMEM: the memory would pass RLIMIT_MEMLOCK ("
                + state() + "). " + advice(), e);
    }

    private static String state() {
        long soft = LibC.memlockLimit()[0];
        return "RLIMIT_MEMLOCK is " + (soft < 0 ? "unlimited" : soft + " bytes") + ", " + pinnedBytes()
                + " bytes are pinned or locked already, and the process has no CAP_IPC_LOCK";
    }

    private static String advice() {
        return "Raise it: 'ulimit -l unlimited' (or a size in KiB) in the shell that starts java, LimitMEMLOCK=infinity"
                + " for a systemd service, '* - memlock unlimited' in /etc/security/limits.conf, or --ulimit memlock=-1"
                + " for a container; or register less (the pool registers 4 MiB chunks).";
    }

    /** VmPin + VmLck of /proc/self/status, in bytes. */
    private static long pinnedBytes() {
        long kb = 0;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmPin:") || line.startsWith("VmLck:")) {
                    kb += Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;   // unknown: count nothing
        }
        return kb * 1024;
    }

    /** Whether CAP_IPC_LOCK is in this process's effective capabilities (then no limit applies). */
    private static boolean hasIpcLock() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("CapEff:")) {
                    return (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << CAP_IPC_LOCK)) != 0;
                }
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return false;
    }
}
