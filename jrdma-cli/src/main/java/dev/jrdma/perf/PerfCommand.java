package dev.jrdma.perf;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code jrdma perf TEST [options] [SERVER]}: perftest's tests on jrdma, over any provider.
 * Without SERVER it is the server (it serves one client, as perftest does); with SERVER the
 * client, which prints the results; with {@code --loopback} both: the server in a process of
 * its own, the client in this one.
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
        if (java.util.Arrays.asList(args).contains("--help") || java.util.Arrays.asList(args).contains("-h")) {
            out.print(PerfOptions.USAGE);
            return 0;
        }
        PerfOptions o;
        try {
            o = PerfOptions.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("jrdma perf: " + e.getMessage());
            err.print(PerfOptions.USAGE);
            return 2;
        }
        try (PerfRecording recording = PerfRecording.start(o.jfr(), err)) {
            if (o.host() == null && (!o.loopback() || o.loopbackServer())) {
                try (PerfServer server = new PerfServer(o)) {
                    err.println("jrdma perf: " + o.test().perftestName() + " server waiting on " + server.address());
                    server.serve();
                }
                return 0;
            }
            if (o.loopback()) {
                return loopback(o, args, out, err);
            }
            try (PerfClient client = new PerfClient(o, new InetSocketAddress(o.host(), o.port()), progressTo(err, System.console()))) {
                List<PerfClient.Result> results = client.runAll();
                RunFacts facts = client.facts();
                PerfReport.print(out, o, facts, results);
                plot(o, facts.provider(), results, out, err);
            }
            return 0;
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            err.println("jrdma perf: " + (cause.getMessage() != null ? cause.getMessage() : cause.toString()));   // never "null"
            if (Boolean.getBoolean("jrdma.perf.debug")) {
                cause.printStackTrace(err);
            }
            return 1;
        }
    }

    /**
     * --loopback: the server in a process of its own, as a user runs the two ends (two JVMs, each
     * with its own JIT, GC and IO thread, on 127.0.0.1 or the device's address), then the client
     * here. The server's stderr is passed on; its address is read from its "waiting on" line.
     */
    private static int loopback(PerfOptions o, String[] args, PrintStream out, PrintStream err) throws Exception {
        if (o.gidIndex() >= 0 && (o.provider() == null || o.provider().equals("verbs"))) {
            PerfServer.gidAddress(o, o.device());   // a wrong -x or --bind fails here, before a JVM is started for nothing
        }
        List<String> cmd = new java.util.ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED", "-cp", classPath(),
                dev.jrdma.cli.Main.class.getName(), "perf"));
        cmd.addAll(serverArgs(args));
        Process server = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            java.io.BufferedReader lines = new java.io.BufferedReader(new java.io.InputStreamReader(server.getErrorStream(),
                    java.nio.charset.StandardCharsets.UTF_8));
            CompletableFuture<InetSocketAddress> address = new CompletableFuture<>();
            Thread.ofPlatform().daemon().name("jrdma-perf-server-stderr").start(() -> {
                try {
                    for (String line; (line = lines.readLine()) != null; ) {
                        int at = line.indexOf(WAITING_ON);
                        if (at >= 0 && !address.isDone()) {
                            address.complete(parseAddress(line.substring(at + WAITING_ON.length()).trim()));
                        } else {
                            err.println("jrdma perf server: " + line);
                        }
                    }
                    address.completeExceptionally(new IllegalStateException("the server process ended (exit "
                            + server.waitFor() + ") before it listened"));
                } catch (Exception e) {
                    address.completeExceptionally(e);
                }
            });
            InetSocketAddress at;
            try {
                at = address.get(SERVER_START_SECONDS, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("the loopback's server process did not say where it listens within "
                        + SERVER_START_SECONDS + " s", e);
            }
            try (PerfClient client = new PerfClient(o, at, progressTo(err, System.console()))) {
                List<PerfClient.Result> results = client.runAll();
                RunFacts facts = client.facts();
                if (!server.waitFor(60, TimeUnit.SECONDS)) {
                    err.println("jrdma perf: the server process did not end within 60 s of the run");
                }
                PerfReport.print(out, o, facts, results);
                plot(o, facts.provider(), results, out, err);
            }
            return 0;
        } finally {
            server.destroyForcibly();
        }
    }

    private static final String WAITING_ON = "server waiting on ";
    /**
     * How long --loopback waits for its server process to listen: a JVM's start and its first
     * native calls, seconds on a real CPU, took over a minute in the Soft-RoCE VM's emulated one.
     */
    private static final int SERVER_START_SECONDS = 240;

    /**
     * Where the progress line goes: stderr when the command runs on a terminal, else nowhere. The
     * line is redrawn with a carriage return, which in a file or a pipe is only noise.
     */
    static PrintStream progressTo(PrintStream err, java.io.Console console) {
        return console != null && console.isTerminal() ? err : null;
    }

    /**
     * Where this command's code and the library's are (directories or jars), then the class path:
     * under a launcher with a class loader of its own (JUnit's console launcher in the VM),
     * java.class.path names only the launcher.
     */
    static String classPath() {
        java.util.LinkedHashSet<String> parts = new java.util.LinkedHashSet<>();
        for (Class<?> c : List.of(PerfCommand.class, dev.jrdma.Rdma.class)) {
            java.security.CodeSource source = c.getProtectionDomain().getCodeSource();
            if (source != null && source.getLocation() != null) {
                try {
                    parts.add(java.nio.file.Path.of(source.getLocation().toURI()).toString());
                } catch (java.net.URISyntaxException | IllegalArgumentException e) {
                    // not a file: the class path below has to do
                }
            }
        }
        String cp = System.getProperty("java.class.path", "");
        if (!cp.isEmpty()) {
            parts.addAll(List.of(cp.split(java.io.File.pathSeparator)));
        }
        return String.join(java.io.File.pathSeparator, parts);
    }

    /** The command line of the loopback's server: this one's, without what is the client's, on a port of its own. */
    static List<String> serverArgs(String[] args) {
        List<String> a = new java.util.ArrayList<>();
        boolean port = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--loopback", "--json", "--csv" -> {
                }
                case "--plot", "--jfr" -> i++;   // the client's: the server would write the same file
                case "-p", "--port" -> {
                    port = true;
                    a.add(args[i]);
                    a.add(args[++i]);
                }
                default -> a.add(args[i]);
            }
        }
        if (!port) {
            a.addAll(List.of("-p", "0"));
        }
        a.add("--loopback-server");   // listens where --loopback's server does: 127.0.0.1, or the device's address
        return a;
    }

    /** "/127.0.0.1:41234" or "host/10.77.0.1:18515", as InetSocketAddress prints itself. */
    static InetSocketAddress parseAddress(String text) {
        int colon = text.lastIndexOf(':');
        String host = text.substring(0, colon);
        host = host.substring(host.indexOf('/') + 1);
        return new InetSocketAddress(host, Integer.parseInt(text.substring(colon + 1)));
    }
}
