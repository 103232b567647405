package dev.jrdma.perf;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code jrdma perf TEST [options] [SERVER]}: perftest's tests on jrdma, over any provider.
 * Without SERVER it is the server (it serves one client, as perftest does); with SERVER the
 * client, which prints the results; with {@code --loopback} both, in this process, the server
 * on a thread of its own.
 */
public final class PerfCommand {
    private PerfCommand() {
    }

    /** With --plot: draws the results and says where (after the table; on stderr for --json and --csv). */
    private static void plot(PerfOptions o, String provider, List<PerfClient.Result> results, PrintStream out, PrintStream err)
            throws java.io.IOException {
        if (o.plot() == null) {
            return;
        }
        java.nio.file.Path png = java.nio.file.Path.of(o.plot()).toAbsolutePath();
        PerfPlot.write(png, o, provider, results);
        (o.format().equals("text") ? out : err).println("Plot written to " + png);
    }

    /** Exit code: 0 ok, 1 the run failed, 2 usage. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        PerfOptions o;
        try {
            o = PerfOptions.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("jrdma perf: " + e.getMessage());
            err.print(PerfOptions.USAGE);
            return 2;
        }
        try {
            if (o.host() == null && !o.loopback()) {
                try (PerfServer server = new PerfServer(o)) {
                    err.println("jrdma perf: " + o.test().perftestName() + " server waiting on " + server.address());
                    server.serve();
                }
                return 0;
            }
            if (o.loopback()) {
                PerfOptions serverOptions = new PerfOptions(o.test(), null, o.port() == 18515 ? 0 : o.port(), o.device(),
                        o.provider(), o.sizes(), o.iterations(), o.txDepth(), true, o.format(), o.bind(), o.gidIndex(), null, o.warmUp(),
                        o.ackTimeout(), o.outReads(), o.postList());
                try (PerfServer server = new PerfServer(serverOptions)) {
                    CompletableFuture<Integer> served = new CompletableFuture<>();
                    Thread t = Thread.ofPlatform().name("jrdma-perf-server").daemon().start(() -> {
                        try {
                            served.complete(server.serve());
                        } catch (Throwable e) {
                            served.completeExceptionally(e);
                        }
                    });
                    List<PerfClient.Result> results;
                    RunFacts facts;
                    try (PerfClient client = new PerfClient(o, server.address(), err)) {
                        results = client.runAll();
                        facts = client.facts();
                    } catch (RuntimeException e) {
                        // The client's view ("the peer disconnected") hides why: say what the server saw.
                        try {
                            served.get(10, TimeUnit.SECONDS);
                        } catch (java.util.concurrent.ExecutionException s) {
                            e.addSuppressed(s.getCause());
                            err.println("jrdma perf: the server failed: " + s.getCause());
                        } catch (java.util.concurrent.TimeoutException s) {
                            err.println("jrdma perf: the server did not end within 10 s of the client's failure");
                        }
                        throw e;
                    }
                    served.get(60, TimeUnit.SECONDS);
                    t.join(TimeUnit.SECONDS.toMillis(10));
                    PerfReport.print(out, o, facts, results);
                    plot(o, facts.provider(), results, out, err);
                }
                return 0;
            }
            try (PerfClient client = new PerfClient(o, new InetSocketAddress(o.host(), o.port()), err)) {
                List<PerfClient.Result> results = client.runAll();
                RunFacts facts = client.facts();
                PerfReport.print(out, o, facts, results);
                plot(o, facts.provider(), results, out, err);
            }
            return 0;
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            err.println("jrdma perf: " + cause.getMessage());
            if (Boolean.getBoolean("jrdma.perf.debug")) {
                cause.printStackTrace(err);
            }
            return 1;
        }
    }
}
