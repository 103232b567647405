package dev.jrdma.provider.verbs.ffi;

import dev.jrdma.os.MallocStats;
import dev.jrdma.os.SockAddr;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.InetSocketAddress;

/**
 * The child JVM of {@link NativeHeapVerbsTest}, run interpreted ({@code -Xint}, serial GC) so that
 * the JVM's own malloc calls (the JIT's arenas above all, megabytes up and down) do not drown
 * what is measured: the bytes malloc holds, per cycle, after each rdma_cm/verbs step is done and
 * undone a few hundred times, warm-up first. Prints {@code step NAME BYTES_PER_CYCLE [ROUNDS]}
 * for each, then {@code done}. The step "control" leaks 64 bytes a cycle on purpose: the measure must see it.
 */
public final class NativeHeapMain {
    interface Step {
        void run() throws Throwable;
    }

    private static final MethodHandle MALLOC = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("malloc").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));

    private NativeHeapMain() {
    }

    /**
     * {@code warm} cycles, then 15 rounds of {@code count / 15}; prints the median round's bytes
     * per cycle, and the rounds. A leak shows in every round. The JVM's own malloc noise comes in
     * 32 KiB steps both ways (its arena chunks, which a service thread frees every 5 s), in the
     * few rounds a step falls into: short rounds keep those few.
     */
    private static void measure(String name, int warm, int count, Step step) throws Throwable {
        for (int i = 0; i < warm; i++) {
            step.run();
        }
        double[] rounds = new double[15];
        for (int r = 0; r < rounds.length; r++) {
            long before = MallocStats.inUse();
            for (int i = 0; i < count / rounds.length; i++) {
                step.run();
            }
            rounds[r] = (MallocStats.inUse() - before) / (double) (count / rounds.length);
        }
        double[] sorted = rounds.clone();
        java.util.Arrays.sort(sorted);
        System.out.printf("step %s %.1f %s%n", name, sorted[rounds.length / 2], java.util.Arrays.toString(rounds));
    }

    public static void main(String[] args) throws Throwable {
        measure("control", 20, 200, () -> {
            Object unused = MALLOC.invoke(64L);   // never freed: what a leak looks like
        });
        measure("event-channel", 50, 400, () -> new RcEndpoint().close());
        measure("create-destroy-id", 50, 400, () -> {
            RcEndpoint e = new RcEndpoint();
            try (Arena a = Arena.ofConfined()) {
                e.id = LibRdmacm.createId(e.channel, RdmaCmId.PS_TCP, a);
            }
            e.close();
        });
        measure("bind-listen", 50, 300, () -> {
            RcEndpoint e = new RcEndpoint();
            try (Arena a = Arena.ofConfined()) {
                e.id = LibRdmacm.createId(e.channel, RdmaCmId.PS_TCP, a);
                LibRdmacm.bindAddr(e.id, SockAddr.of(VerbsTestBed.nextServerAddress(), a));
                LibRdmacm.listen(e.id, 8);
            }
            e.close();
        });
        measure("resolve-addr-route", 30, 200, () -> {
            RcEndpoint listener = new RcEndpoint();
            RcEndpoint client = new RcEndpoint();
            InetSocketAddress at = VerbsTestBed.nextServerAddress();
            try (Arena a = Arena.ofConfined()) {
                listener.id = LibRdmacm.createId(listener.channel, RdmaCmId.PS_TCP, a);
                LibRdmacm.bindAddr(listener.id, SockAddr.of(at, a));
                LibRdmacm.listen(listener.id, 8);
                client.id = LibRdmacm.createId(client.channel, RdmaCmId.PS_TCP, a);
                LibRdmacm.resolveAddr(client.id, SockAddr.of(new InetSocketAddress(VerbsTestBed.clientIp(), 0), a),
                        SockAddr.of(at, a), RcPair.CM_TIMEOUT_MS);
            }
            client.expect(RdmaCmEvent.ADDR_RESOLVED, RcPair.CM_TIMEOUT_MS);
            LibRdmacm.resolveRoute(client.id, RcPair.CM_TIMEOUT_MS);
            client.expect(RdmaCmEvent.ROUTE_RESOLVED, RcPair.CM_TIMEOUT_MS);
            client.close();
            listener.close();
        });
        // A whole connection: PD, CQ, QP on each side, connect, accept, established, disconnect, destroy.
        measure("rc-connection", 30, 300, () -> RcPair.connect().close());
        System.out.println("done");
    }
}
