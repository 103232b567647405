package dev.jrdma.examples.echo;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The echo client: sends {@code count} messages of {@code size} bytes one after another, each
 * from the callback of the previous echo, checks every echo byte for byte, and reports the
 * average round trip.
 *
 * <pre>
 *   bin/jrdma-example echo-client DEVICE SERVER_IP PORT [COUNT [SIZE]]
 * </pre>
 */
public final class EchoClient {
    private EchoClient() {
    }

    /** What a run measured. */
    public record Result(int messages, int size, double averageRoundTripMicros) {
    }

    public static Result run(Rdma rdma, InetSocketAddress server, int count, int size) throws Exception {
        try (Connection c = rdma.connect(server); LocalRegion out = rdma.allocate(size)) {
            CompletableFuture<Result> done = new CompletableFuture<>();
            int[] round = {0};
            long start = System.nanoTime();
            c.onReceive((conn, echo) -> {
                // Check the echo, then send the next message from this callback (the IO thread).
                // The peer has the message, so the device is done reading `out`: it can be refilled.
                if (echo.byteCount() != size || echo.data().mismatch(out.segment()) != -1) {
                    done.completeExceptionally(new IllegalStateException("echo " + round[0] + " differs from what was sent"));
                    return;
                }
                if (++round[0] == count) {
                    done.complete(new Result(count, size, (System.nanoTime() - start) / 1000.0 / count));
                    return;
                }
                fill(out.segment(), round[0]);
                conn.send(out).exceptionally(e -> {
                    done.completeExceptionally(e);
                    return null;
                });
            });
            fill(out.segment(), 0);
            c.send(out);
            return done.get(60, TimeUnit.SECONDS);
        }
    }

    /** Message {@code n}: its number, then bytes derived from it. */
    private static void fill(MemorySegment m, int n) {
        for (long i = 0; i < m.byteSize(); i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (n * 31 + i));
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: echo-client DEVICE SERVER_IP PORT [COUNT [SIZE]]");
            System.exit(2);
        }
        int count = args.length > 3 ? Integer.parseInt(args[3]) : 1000;
        int size = args.length > 4 ? Integer.parseInt(args[4]) : 64;
        try (Rdma rdma = Rdma.builder().device(args[0]).build()) {
            Result r = run(rdma, new InetSocketAddress(args[1], Integer.parseInt(args[2])), count, size);
            System.out.printf("%d echoes of %d bytes, all checked: %.1f us per round trip%n", r.messages(), r.size(),
                    r.averageRoundTripMicros());
        }
    }
}
