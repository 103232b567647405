package dev.jrdma;

import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.QueuePair;

import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Where a verbs READ's instructions go: run in {@code scripts/softroce-vm --icount}, where a
 * virtual nanosecond is one guest instruction, it times the same 64-byte read_lat loop at several
 * depths of the library, in one JVM (server on device 0 sleeping on events, client INLINE,
 * POLLING, single-threaded on device 1, as {@code jrdma perf} runs it): the public API, its post
 * alone, an empty pass, and the provider's queue pair and completion queue called directly (the
 * floor the engine adds to). Prints the median of each in virtual ns. A diagnostic, not a test:
 * {@code scripts/probe-verbs-path [MODE,...]}.
 *
 * <p>Modes (each timed between two clock reads, whose own cost is {@code clock}): {@code api} a
 * read and the passes until it completed; {@code api-post} its post; {@code api-1pass} the pass
 * that finds its completion; {@code spi}, {@code spi-post}, {@code spi-1poll} the same on the
 * provider's queue pair and completion queue directly; {@code pass-empty} an idle pass through
 * {@code Rdma.poll}, {@code iothread} through the IO thread, {@code cycle} the duty cycle's pass
 * alone, {@code tasks} its tasks' part, {@code source0}/{@code source1} one source each (the
 * connection manager's, the connection's), {@code source-empty} the connection's source,
 * {@code cq-empty} an empty poll of its CQ; {@code checks} the operation's checks, {@code hold}
 * holding and letting go of its region, {@code stage} writing its work request;
 * {@code ffm-x100} 100 critical downcalls of libc's abs, {@code loop-x100} 100 turns of a loop.
 * Each mode warms up for at least 2 virtual seconds and lets the JIT finish before it is timed.
 *
 * <p>{@code -Dprobe.idle=N} (default 0) connects N more connections from the same client before the
 * modes run, left idle: what an idle connection adds to a pass (with each its own completion queue,
 * one poll each; with the IO thread's shared queue, issue 46 §2 step 4, none).
 */
public final class VerbsPathProbe {
    private static final int WARM_UP = Integer.getInteger("probe.warmup", 50_000);
    private static final int ITERATIONS = Integer.getInteger("probe.n", 20_000);
    private static final int IDLE_CONNECTIONS = Integer.getInteger("probe.idle", 0);

    /** libc's abs(3) as a critical downcall, as the verbs hot calls are made: the floor of one FFM call. */
    private static final java.lang.invoke.MethodHandle ABS = java.lang.foreign.Linker.nativeLinker().downcallHandle(
            java.lang.foreign.Linker.nativeLinker().defaultLookup().find("abs").orElseThrow(),
            java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT),
            java.lang.foreign.Linker.Option.critical(false));

    private VerbsPathProbe() {
    }

    /** Counts completions, allocation-free. */
    static final class Count implements CompletionHandler<Void, Object>, CompletionSink {
        long n;

        @Override
        public void completed(Void v, Object a) {
            n++;
        }

        @Override
        public void failed(Throwable e, Object a) {
            throw new IllegalStateException("a read failed", e);
        }

        @Override
        public void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
            if (status != 0) {
                throw new IllegalStateException("status " + status);
            }
            n++;
        }
    }

    public static void main(String[] args) throws Exception {
        String dev0 = System.getenv().getOrDefault("JRDMA_VM_DEV0", "rxe0");
        String dev1 = System.getenv().getOrDefault("JRDMA_VM_DEV1", "rxe1");
        String ip = System.getenv().getOrDefault("JRDMA_VM_IP0", "10.77.0.1");
        String only = args.length > 0 ? args[0] : "all";
        try (Rdma server = Rdma.builder().device(dev0).completionMode(CompletionMode.EVENT).build();
             Rdma client = Rdma.builder().device(dev1).completionMode(CompletionMode.POLLING).ioThreads(Rdma.INLINE)
                     .singleThreaded(true).build();
             LocalRegion target = server.allocate(64);
             LocalRegion dst = client.allocate(64)) {
            AtomicReference<Connection> accepted = new AtomicReference<>();
            try (RdmaServer listener = server.listen(new InetSocketAddress(ip, 21999), accepted::set)) {
                Connection c = connect(client, ip);
                java.util.List<Connection> idle = new java.util.ArrayList<>();
                for (int i = 0; i < IDLE_CONNECTIONS; i++) {
                    idle.add(connect(client, ip));
                }
                System.out.println("idle connections beside the timed one: " + idle.size() + "; the timed one's completions: "
                        + (completionsOf(c.live().life).shared() ? "the IO thread's shared queue" : "a queue of its own"));
                RemoteRegion remote = target.toRemote();
                Count done = new Count();
                for (var fld : Rdma.class.getDeclaredFields()) {
                    if (fld.getType() == dev.jrdma.engine.io.IoThreads.class) {
                        fld.setAccessible(true);
                        var t = ((dev.jrdma.engine.io.IoThreads) fld.get(client)).control();
                        var m = dev.jrdma.runtime.IoThread.class.getDeclaredMethod("sourceCounts");
                        m.setAccessible(true);
                        System.out.println("client sources (polled, resting): " + Arrays.toString((int[]) m.invoke(t)));
                    }
                }
                for (String mode : only.equals("all") ? new String[] {"clock", "api", "api-post", "api-1pass",
                        "spi", "spi-post", "spi-1poll", "pass-empty", "iothread", "cycle", "tasks", "source0", "source1", "source-empty", "cq-empty", "checks", "hold",
                        "stage", "ffm-x100", "loop-x100"} : only.split(",")) {
                    long[] ns = run(mode, client, c, remote, dst, done);
                    Arrays.sort(ns);
                    System.out.printf(Locale.ROOT, "%-11s median %7d  min %7d  p90 %7d%n", mode, ns[ns.length / 2], ns[0],
                            ns[ns.length * 9 / 10]);
                }
                c.close();
                for (Connection i : idle) {
                    i.close();
                }
            }
        }
    }

    /** A connection of the INLINE client, its control steps driven by this thread until it is made. */
    private static Connection connect(Rdma client, String ip) {
        CompletableFuture<Connection> f = client.connectAsync(new InetSocketAddress(ip, 21999), ConnectionConfig.defaults());
        while (!f.isDone()) {
            client.poll();
        }
        return f.join();
    }

    /**
     * The connection's completions: its own queue, or the IO thread's shared one (issue 46 §2 step 4;
     * -Djrdma.verbs.sharedCompletionQueues=false for its own), either way the one its QP completes on.
     */
    private static ConnectionCompletions completionsOf(ConnectionLife life) throws ReflectiveOperationException {
        var field = ConnectionLife.class.getDeclaredField("cq");
        field.setAccessible(true);
        return (ConnectionCompletions) field.get(life);
    }

    private static IoThread io(Rdma r) throws ReflectiveOperationException {
        for (var fld : Rdma.class.getDeclaredFields()) {
            if (fld.getType() == dev.jrdma.engine.io.IoThreads.class) {
                fld.setAccessible(true);
                return ((dev.jrdma.engine.io.IoThreads) fld.get(r)).control();
            }
        }
        throw new IllegalStateException("no IoThreads in Rdma");
    }

    /** One timed iteration of a mode: its own method, so that the JIT compiles each on its own (C2 after the warm-up). */
    private abstract static class Mode {
        abstract long once();
    }

    private static long[] run(String mode, Rdma client, Connection c, RemoteRegion remote, LocalRegion dst, Count done)
            throws ReflectiveOperationException {
        ConnectionLife life = c.live().life;
        QueuePair qp = life.queuePair();
        CompletionQueue cq = completionsOf(life).queue();
        long addr = dst.address(), raddr = remote.address();
        int lkey = dst.lkey(), rkey = remote.rkey();
        Mode m = switch (mode) {
            case "clock" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    return System.nanoTime() - t0;
                }
            };
            case "api" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    long want = done.n + 1;
                    c.read(remote, dst, null, done);
                    while (done.n < want) {
                        client.poll();
                    }
                    return System.nanoTime() - t0;
                }
            };
            case "api-post" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    long want = done.n + 1;
                    c.read(remote, dst, null, done);
                    long t1 = System.nanoTime();
                    while (done.n < want) {
                        client.poll();
                    }
                    return t1 - t0;
                }
            };
            case "api-1pass" -> new Mode() {
                long once() {
                    long want = done.n + 1;
                    c.read(remote, dst, null, done);
                    long t0 = System.nanoTime();
                    client.poll();
                    long t1 = System.nanoTime();
                    while (done.n < want) {
                        client.poll();
                    }
                    return t1 - t0;
                }
            };
            case "spi" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    long want = done.n + 1;
                    qp.postSend(1L << 40, QueuePair.WR_RDMA_READ, QueuePair.SEND_SIGNALED, addr, 64, lkey, raddr, rkey,
                            0, 0, 0);
                    while (done.n < want) {
                        cq.poll(done, 32);
                    }
                    return System.nanoTime() - t0;
                }
            };
            case "spi-post" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    long want = done.n + 1;
                    qp.postSend(1L << 40, QueuePair.WR_RDMA_READ, QueuePair.SEND_SIGNALED, addr, 64, lkey, raddr, rkey,
                            0, 0, 0);
                    long t1 = System.nanoTime();
                    while (done.n < want) {
                        cq.poll(done, 32);
                    }
                    return t1 - t0;
                }
            };
            case "spi-1poll" -> new Mode() {
                long once() {
                    long want = done.n + 1;
                    qp.postSend(1L << 40, QueuePair.WR_RDMA_READ, QueuePair.SEND_SIGNALED, addr, 64, lkey, raddr, rkey,
                            0, 0, 0);
                    long t0 = System.nanoTime();
                    cq.poll(done, 32);
                    long t1 = System.nanoTime();
                    while (done.n < want) {
                        cq.poll(done, 32);
                    }
                    return t1 - t0;
                }
            };
            case "pass-empty" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    client.poll();
                    return System.nanoTime() - t0;
                }
            };
            case "source-empty" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    life.source.poll();
                    return System.nanoTime() - t0;
                }
            };
            case "cq-empty" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    cq.poll(done, 32);
                    return System.nanoTime() - t0;
                }
            };
            case "checks" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    OperationChecks.check(Operation.READ, dst, remote, life.peer());
                    life.checkUsable("read");
                    return System.nanoTime() - t0;
                }
            };
            case "hold" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    RegionResources r = dst.resources();
                    r.acquireForOperation();
                    r.releaseFromOperation();
                    return System.nanoTime() - t0;
                }
            };
            case "stage" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    qp.stage(0, 1L << 40, QueuePair.WR_RDMA_READ, QueuePair.SEND_SIGNALED, addr, 64, lkey, raddr, rkey,
                            0, 0, 0);
                    return System.nanoTime() - t0;
                }
            };
            case "ffm-x100" -> new Mode() {
                long once() {
                    long t0 = System.nanoTime();
                    int sum = 0;
                    try {
                        for (int k = 0; k < 100; k++) {
                            sum += (int) ABS.invokeExact(k);
                        }
                    } catch (Throwable e) {
                        throw new IllegalStateException(e);
                    }
                    return System.nanoTime() - t0 + (sum & 0);
                }
            };
            case "loop-x100" -> new Mode() {
                int sink;
                long once() {
                    long t0 = System.nanoTime();
                    int sum = 0;
                    for (int k = 0; k < 100; k++) {
                        sum += Math.abs(k ^ sink);
                    }
                    sink = sum;
                    return System.nanoTime() - t0;
                }
            };
            case "iothread", "cycle", "tasks", "source0", "source1" -> {
                IoThread t = io(client);
                java.util.function.IntSupplier part;
                switch (mode) {
                    case "iothread" -> part = t::poll;
                    case "cycle" -> part = dev.jrdma.runtime.PassProbe.pass(t);
                    case "tasks" -> part = dev.jrdma.runtime.PassProbe.runTasks(t);
                    case "source0" -> part = dev.jrdma.runtime.PassProbe.source(t, 0);
                    default -> part = dev.jrdma.runtime.PassProbe.source(t, 1);
                }
                yield new Mode() {
                    long once() {
                        long t0 = System.nanoTime();
                        part.getAsInt();
                        return System.nanoTime() - t0;
                    }
                };
            }
            default -> throw new IllegalArgumentException("no mode " + mode);
        };
        // The warm-up is counted and timed: at least WARM_UP iterations and 2 s (virtual: 2 billion
        // instructions), then a sleep so that the JIT's compiler threads, which share the one vCPU,
        // finish what they queued; a short mode would otherwise be timed in C1's code.
        long warmEnd = System.nanoTime() + 2_000_000_000L;
        for (int i = 0; i < WARM_UP || System.nanoTime() < warmEnd; i++) {
            m.once();
        }
        try {
            Thread.sleep(300);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (int i = 0; i < WARM_UP / 10; i++) {
            m.once();
        }
        long[] ns = new long[ITERATIONS];
        for (int i = 0; i < ITERATIONS; i++) {
            ns[i] = m.once();
        }
        return ns;
    }
}
