package dev.jrdma;

/**
 * Run by {@link MemlockVerbsTest} under a small RLIMIT_MEMLOCK and without CAP_IPC_LOCK: asks
 * for a budget the limit cannot hold, then allocates (the pool registers a 4 MiB chunk), and
 * prints what each said, one line each.
 */
public final class MemlockChildMain {
    private MemlockChildMain() {
    }

    public static void main(String[] args) {
        String device = args[0];
        try (Rdma rdma = Rdma.builder().provider("verbs").device(device).memoryBudget(64 << 20).build()) {
            System.out.println("budget: accepted");
        } catch (RuntimeException e) {
            System.out.println("budget: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        try (Rdma rdma = Rdma.builder().provider("verbs").device(device).build()) {
            rdma.allocate(4096);
            System.out.println("allocate: accepted");
        } catch (RuntimeException e) {
            System.out.println("allocate: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        System.out.println("done");
    }
}
