package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 45, finding 3: idle connections cost a core. Each IO pass called progress (a recv())
 * on every queue pair and spun 64 passes before it slept, so 1000 idle, handshaked connections
 * kept the IO thread at 100 %. Now a connection with nothing to do rests: its IO thread leaves
 * it out of the passes until epoll says its socket is ready or something is posted to it, so a
 * pass costs O(connections with work).
 *
 * <p>{@value #IDLE} connections from a child process (each through the whole handshake, then
 * silent) must cost the server's IO thread under 2 % of a core over a keep-alive interval (in
 * which most of them send their first keep-alive), read from the thread's own run time in
 * {@code /proc/self/task/TID/schedstat}; and a connection of this process's still works among them.
 */
class IdleConnectionsTest {
    /**
     * The 10 000, or as many as this machine's open-file limit lets each of the two
     * processes hold (with 1000 to spare; the JVM raises its soft limit to the hard one).
     */
    static final int IDLE = Math.min(Integer.getInteger("jrdma.test.idleConnections", 10_000), openFileLimit() - 1000);
    /** The share of one core the IO thread may use while every connection is idle. */
    static final double MAX_CORE_SHARE = 0.02;
    /** What an idle connection may cost the server beyond its socket's buffers (the kernel's). */
    static final long MAX_BYTES_PER_CONNECTION = 64 * 1024;

    @Test
    @Timeout(240)
    void tenThousandIdleConnectionsCostTheIoThreadUnderTwoPercentOfACore() throws Exception {
        assertTrue(IDLE >= 1000, "the open-file limit (" + openFileLimit() + ") leaves room for " + IDLE
                + " idle connections; the test needs at least 1000");
        CountDownLatch accepted = new CountDownLatch(IDLE);
        java.util.concurrent.atomic.AtomicReference<LocalRegion> exposed = new java.util.concurrent.atomic.AtomicReference<>();
        try (Rdma server = Rdma.builder().provider("tcp").ioThreads(1).maxConnections(IDLE + 64)
                .maxConnectionsPerSource(IDLE + 64).build();
             LocalRegion target = server.allocate(64)) {
            // The idle ones count down; ours (after them) is handed the target region.
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> {
                if (exposed.get() != null) {
                    c.sendRegion(exposed.get());
                } else {
                    accepted.countDown();
                }
            });
            var heap = java.lang.management.ManagementFactory.getMemoryMXBean();
            System.gc();
            long rssBefore = rssBytes();
            long heapBefore = heap.getHeapMemoryUsage().getUsed();
            long committedBefore = heap.getHeapMemoryUsage().getCommitted();
            long t0 = System.nanoTime();
            Process children = startClients(l.address(), IDLE);
            long connectMillis = (System.nanoTime() - t0) / 1_000_000;
            try {
                assertTrue(accepted.await(180, TimeUnit.SECONDS), "the server accepted " + (IDLE - accepted.getCount()) + " of " + IDLE);
                System.gc();
                long rssPerConnection = (rssBytes() - rssBefore) / IDLE;
                long heapPerConnection = (heap.getHeapMemoryUsage().getUsed() - heapBefore) / IDLE;
                long committedPerConnection = (heap.getHeapMemoryUsage().getCommitted() - committedBefore) / IDLE;
                int tid = ioThreadTid("jrdma-io-tcp-0");
                // Settled (the handshakes' work done, every connection at rest): a 1 s window under
                // the bound. Then a whole keep-alive interval, in which most of the connections send
                // their first keep-alive: the share over it must be under the bound too. (That they
                // spread their keep-alives over it, not send them in one look, KeepAliveScheduleTest
                // shows on its own clock; the 1 s windows are printed.)
                List<String> seen = new ArrayList<>();
                boolean settled = false;
                for (int w = 0; w < 15 && !settled; w++) {
                    double share = coreShare(tid, 1_000_000_000L);
                    seen.add(String.format("%.2f%%", share * 100));
                    settled = share < MAX_CORE_SHARE;
                }
                assertTrue(settled, "the IO thread never settled under " + MAX_CORE_SHARE * 100 + " % of a core in 1 s windows with "
                        + IDLE + " idle connections: " + seen);
                seen.add("then");
                long keepAlivesBefore = TcpQueuePair.KEEP_ALIVES.get();
                long windows = TimeUnit.NANOSECONDS.toSeconds(TcpQueuePair.MAX_KEEP_ALIVE_NANOS);
                double sum = 0;
                for (long w = 0; w < windows; w++) {
                    double share = coreShare(tid, 1_000_000_000L);
                    seen.add(String.format("%.2f%%", share * 100));
                    sum += share;
                }
                long keepAlives = TcpQueuePair.KEEP_ALIVES.get() - keepAlivesBefore;
                double mean = sum / windows;
                seen.add(String.format("mean %.2f%%", mean * 100));
                assertTrue(keepAlives >= IDLE / 4, "only " + keepAlives + " keep-alives of " + IDLE
                        + " connections in the keep-alive interval measured: the windows did not cover their sending");
                assertTrue(mean < MAX_CORE_SHARE, "the IO thread's share of a core with " + IDLE + " idle connections over a"
                        + " keep-alive interval (" + keepAlives + " keep-alives sent) must be under " + MAX_CORE_SHARE * 100
                        + " %; settled, then its 1 s windows: " + seen);
                // A connection of ours among them still works: writes and a read back.
                exposed.set(target);
                try (Rdma client = Rdma.builder().provider("tcp").build();   // after: its IO thread has the same name
                     Connection c = client.connect(l.address());
                     LocalRegion buf = client.allocate(8);
                     LocalRegion back = client.allocate(8)) {
                    dev.jrdma.RemoteRegion remote = c.receiveRegion().get(30, TimeUnit.SECONDS);
                    for (long i = 1; i <= 100; i++) {
                        buf.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, i);
                        c.writeSync(buf, remote.slice(0, 8));
                    }
                    c.readSync(remote.slice(0, 8), back);
                    assertEquals(100, back.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
                }
                // What a connection costs: its objects (the heap in use after a GC) and its native
                // memory (what became resident beyond the heap's own growth).
                long nativePerConnection = Math.max(0, rssPerConnection - committedPerConnection);
                long costPerConnection = heapPerConnection + nativePerConnection;
                assertTrue(costPerConnection < MAX_BYTES_PER_CONNECTION, "an idle connection costs " + costPerConnection / 1024
                        + " KiB (heap " + heapPerConnection / 1024 + " KiB, native " + nativePerConnection / 1024
                        + " KiB), at most " + MAX_BYTES_PER_CONNECTION / 1024 + " KiB");
                System.out.printf("IdleConnectionsTest: %d idle connections (made in %d ms): IO thread %s of a core in 1 s"
                        + " windows; each: %d KiB resident (of which heap committed %d KiB), %d KiB of heap in use%n", IDLE,
                        connectMillis, seen, rssPerConnection / 1024, committedPerConnection / 1024, heapPerConnection / 1024);
            } finally {
                children.getOutputStream().close();
                children.destroy();
                children.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** The child holding {@code n} idle connections to {@code server}; returns once they are all up. */
    private static Process startClients(InetSocketAddress server, int n) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                childClassPath(), IdleClientsMain.class.getName(),
                server.getAddress().getHostAddress(), String.valueOf(server.getPort()), String.valueOf(n))
                .redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
            StringBuilder seen = new StringBuilder();
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    if (line.startsWith("ready ")) {
                        Thread.ofVirtual().start(() -> {
                            try {
                                while (out.readLine() != null) {
                                    // later output is not looked at
                                }
                            } catch (java.io.IOException ignored) {
                                // the child ended
                            }
                        });
                        return line;
                    }
                    seen.append(line).append('\n');
                }
            } catch (java.io.IOException e) {
                seen.append(e);
            }
            throw new IllegalStateException("the clients' process ended before it was ready:\n" + seen);
        });
        try {
            assertEquals("ready " + n, ready.get(180, TimeUnit.SECONDS));
            return p;
        } catch (Exception | AssertionError e) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
            throw e;
        }
    }

    static String childClassPath() throws Exception {
        return Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI()) + java.io.File.pathSeparator
                + Path.of(IdleClientsMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** The share of a core thread {@code tid} ran for over the next {@code nanos} of wall time. */
    static double coreShare(int tid, long nanos) throws Exception {
        long ran = runNanos(tid);
        long t0 = System.nanoTime();
        LockSupport.parkNanos(nanos);   // the measurement's window, not a wait for an event
        long ranAfter = runNanos(tid);
        return (double) (ranAfter - ran) / (System.nanoTime() - t0);
    }

    /** The time thread {@code tid} has run, in ns (the first field of its schedstat). */
    static long runNanos(int tid) throws Exception {
        String s = Files.readString(Path.of("/proc/self/task/" + tid + "/schedstat")).trim();
        return Long.parseLong(s.substring(0, s.indexOf(' ')));
    }

    /** The one thread of this process named {@code name}. */
    static int ioThreadTid(String name) throws Exception {
        int found = -1;
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                String comm;
                try {
                    comm = Files.readString(t.resolve("comm")).trim();
                } catch (java.io.IOException gone) {
                    continue;   // the thread ended meanwhile
                }
                if (comm.equals(name)) {
                    assertEquals(-1, found, "one thread named " + name);
                    found = Integer.parseInt(t.getFileName().toString());
                }
            }
        }
        assertTrue(found > 0, "a thread named " + name);
        return found;
    }

    /** This process's limit of open files (the soft one, which the JVM raised to the hard one), from /proc/self/limits. */
    static int openFileLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max open files")) {
                    String[] f = line.substring("Max open files".length()).trim().split("\\s+");
                    return f[0].equals("unlimited") ? Integer.MAX_VALUE : (int) Math.min(Integer.MAX_VALUE, Long.parseLong(f[0]));
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            throw new IllegalStateException("reading /proc/self/limits", e);
        }
        throw new IllegalStateException("no open-file limit in /proc/self/limits");
    }

    /** This process's resident memory (VmRSS), in bytes. */
    static long rssBytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
