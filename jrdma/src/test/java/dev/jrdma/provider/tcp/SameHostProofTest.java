package dev.jrdma.provider.tcp;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RemoteRegion;
import dev.jrdma.os.Memfd;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.UnixSockets;
import dev.jrdma.provider.shm.SharedByteRing;
import dev.jrdma.spi.QueuePairSpec;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * shm's same-host claim is proven, not believed (issue 17). In 0.1 a peer that copied our boot id
 * named a pid and fd, and the shm side opened {@code /proc/PID/fd/FD} with its own rights and
 * mapped it read-write, growing the file. Now a server of this host maps only what a process of
 * its own uid hands over on a Unix socket the kernel vouches for, and only a memfd whose size is
 * sealed and covers what was announced. Each case runs against a target in a JVM of its own and
 * then reads the target's {@code /proc/PID/maps}: nothing of the attacker's is mapped there.
 */
class SameHostProofTest {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final QueuePairSpec SPEC = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
    private static final long RING_SIZE = SharedByteRing.HEADER + (1 << 20);

    @TempDir
    Path temp;

    /**
     * A peer claims this host (our boot id) and names a rendezvous nobody listens on, or a socket
     * that is not a jrdma rendezvous: no channel, so ACCEPT offers none, the target never connects
     * to the foreign socket, and a READY_TO_USE that claims rings ends the connection.
     */
    @ParameterizedTest
    @ValueSource(strings = {"nobody listens", "not jrdma's"})
    @Timeout(60)
    void aClaimOfThisHostWithoutAProofGetsNoChannel(String rendezvous) throws Exception {
        byte[] name = rendezvous.equals("nobody listens") ? rendezvousName()
                : ("dbus-" + Long.toHexString(RANDOM.nextLong())).getBytes(StandardCharsets.US_ASCII);
        int listening = rendezvous.equals("not jrdma's") ? UnixSockets.listen(name, 4) : -1;
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start("shm");
             RawPeer p = RawPeer.open(target.address)) {
            TcpHandshake.Hello accept = hello(p, name, randomNonce());
            assertEquals(0, accept.flags(), "no channel was opened, so ACCEPT offers none");
            if (listening >= 0) {
                assertEquals(-1, Sockets.accept(listening), "the target connected to a socket that is not a rendezvous");
            }
            p.writeFully(ByteBuffer.wrap(TcpHandshake.readyToUse(true)), 5_000);
            assertTrue(p.closedWithin(2_000), "READY_TO_USE claimed rings nobody offered: the connection ends");
            assertNothingForeignMapped(target, null);
        } finally {
            if (listening >= 0) {
                Sockets.close(listening);
            }
        }
    }

    /**
     * A peer of our own uid proves itself (it listens on a rendezvous the target connects to) and
     * then hands over, as its ring, what no honest peer would: a regular file (the canary), a memfd
     * whose size can change, or a sealed memfd smaller than the ring it announces. The target first
     * sends the nonce, and no descriptor (its ring goes only to a client that sent its own); then
     * refuses the peer's, ends the connection without sending its ring, and maps nothing of it;
     * the canary is unchanged byte for byte.
     */
    @ParameterizedTest
    @ValueSource(strings = {"regular file", "unsealed memfd", "short sealed memfd", "no descriptor"})
    @Timeout(60)
    void aProvenPeerMayHandOverOnlyASealedMemfdThatHoldsWhatItAnnounces(String what) throws Exception {
        Path canary = temp.resolve("canary");
        byte[] canaryBytes = new byte[4096];
        RANDOM.nextBytes(canaryBytes);
        Files.write(canary, canaryBytes);
        byte[] name = rendezvousName();
        int listening = UnixSockets.listen(name, 4);
        int unix = -1;
        Path log = temp.resolve("target.log");
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start("shm", ProcessBuilder.Redirect.to(log.toFile()));
             RawPeer p = RawPeer.open(target.address);
             FileChannel canaryChannel = FileChannel.open(canary, StandardOpenOption.READ, StandardOpenOption.WRITE);
             Arena arena = Arena.ofConfined()) {
            byte[] nonce = randomNonce();
            TcpHandshake.Hello accept = hello(p, name, nonce);
            assertEquals(TcpHandshake.SAME_HOST_OFFERED, accept.flags(), "a process of our uid listened: a channel");
            unix = Sockets.accept(listening);
            assertTrue(unix >= 0, "the target connected to the rendezvous before its ACCEPT");
            assertEquals(target.process.pid(), UnixSockets.peer(unix).pid(), "the kernel names the target");
            MemorySegment record = arena.allocate(40, 8);
            UnixSockets.Received offer = UnixSockets.receive(unix, record);
            assertEquals(40, offer.length());
            assertFalse(offer.truncated());
            ByteBuffer n = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(SameHostChannel.RING_OFFER, record.get(JAVA_LONG, 0));
            assertEquals(n.getLong(), record.get(JAVA_LONG, 8), "the offer carries our nonce");
            assertEquals(n.getLong(), record.get(JAVA_LONG, 16));
            assertEquals(-1, offer.fd(), "no descriptor goes to a rendezvous before its owner claimed the nonce");

            int bad = switch (what) {
                case "regular file" -> fdOf(canary);
                case "unsealed memfd" -> Memfd.create("attacker", RING_SIZE + Memfd.PAGE, 0);
                case "short sealed memfd" -> Memfd.createSealed("attacker", Memfd.PAGE);
                default -> -1;
            };
            record.fill((byte) 0);
            record.set(JAVA_LONG, 0, SameHostChannel.RING);
            record.set(JAVA_LONG, 32, RING_SIZE);
            assertEquals(40, UnixSockets.send(unix, record, bad));
            if (bad >= 0 && !what.equals("regular file")) {
                Sockets.close(bad);
            }
            p.writeFully(ByteBuffer.wrap(TcpHandshake.readyToUse(true)), 5_000);
            assertTrue(p.closedWithin(2_000), "the peer's ring was refused: the connection ends");
            UnixSockets.Received after = UnixSockets.receive(unix, record);
            assertTrue(after.fd() < 0 && after.length() <= 0, "the target sent nothing more, no ring: " + after);
            String said = Files.readString(log);
            assertTrue(said.contains("the client's ring was not handed over as a sealed memfd"),
                    "the target ended the connection because it refused the ring: " + said);
            assertNothingForeignMapped(target, canary);
            assertArrayEquals(canaryBytes, Files.readAllBytes(canary), "the canary is unchanged byte for byte");
            assertEquals(4096, Files.size(canary), "the canary did not grow");
        } finally {
            if (unix >= 0) {
                Sockets.close(unix);
            }
            Sockets.close(listening);
        }
    }

    /**
     * The honest order, seen from the wire: the target (a server) sends the nonce alone; only
     * after this client sent its ring (a sealed memfd) and READY_TO_USE does the target's ring
     * come, as a memfd sealed against resizing that holds what it announces.
     */
    @Test
    @Timeout(60)
    void theServersRingGoesOnlyToAClientThatSentItsOwn() throws Exception {
        byte[] name = rendezvousName();
        int listening = UnixSockets.listen(name, 4);
        int unix = -1;
        int ours = Memfd.createSealed("jrdma", RING_SIZE);
        try (HostilePeerTest.Target target = HostilePeerTest.Target.start("shm");
             RawPeer p = RawPeer.open(target.address);
             Arena arena = Arena.ofConfined()) {
            byte[] nonce = randomNonce();
            TcpHandshake.Hello accept = hello(p, name, nonce);
            assertEquals(TcpHandshake.SAME_HOST_OFFERED, accept.flags());
            unix = Sockets.accept(listening);
            assertTrue(unix >= 0, "the target connected to the rendezvous before its ACCEPT");
            MemorySegment record = arena.allocate(40, 8);
            UnixSockets.Received offer = UnixSockets.receive(unix, record);
            assertEquals(40, offer.length());
            assertEquals(SameHostChannel.RING_OFFER, record.get(JAVA_LONG, 0));
            assertEquals(-1, offer.fd(), "the offer carries the nonce, no descriptor");
            assertTrue(UnixSockets.receive(unix, record).length() < 0, "nothing more before our ring");

            record.fill((byte) 0);
            record.set(JAVA_LONG, 0, SameHostChannel.RING);
            record.set(JAVA_LONG, 32, RING_SIZE);
            assertEquals(40, UnixSockets.send(unix, record, ours));
            p.writeFully(ByteBuffer.wrap(TcpHandshake.readyToUse(true)), 5_000);
            UnixSockets.Received ring = null;
            for (long until = System.nanoTime() + 5_000_000_000L; System.nanoTime() < until; ) {
                ring = UnixSockets.receive(unix, record);
                if (ring.length() != -dev.jrdma.os.Errno.EAGAIN) {
                    break;
                }
                Thread.onSpinWait();
            }
            assertEquals(40, ring.length(), "the target's ring came after ours");
            assertEquals(SameHostChannel.RING, record.get(JAVA_LONG, 0));
            assertTrue(ring.fd() >= 0, "the target's ring comes as a descriptor");
            try {
                assertEquals(Memfd.SIZE_SEALS, Memfd.seals(ring.fd()) & Memfd.SIZE_SEALS,
                        "the target's ring is a memfd sealed against resizing");
                assertTrue(Memfd.size(ring.fd()) >= record.get(JAVA_LONG, 24) + record.get(JAVA_LONG, 32),
                        "the memfd holds the ring it announces");
            } finally {
                Sockets.close(ring.fd());
            }
        } finally {
            if (unix >= 0) {
                Sockets.close(unix);
            }
            Sockets.close(ours);
            Sockets.close(listening);
        }
    }

    /**
     * A target running as another user is reached from here (root) over shm. As uid 4242 it
     * connects to our rendezvous, the kernel says we are uid 0, and it keeps the connection on
     * tcp and logs why. As 65534, the overflow uid (how a process of another user namespace
     * appears), it trusts no peer over shm at all: it could not tell a stranger from its own
     * user. Either way the connection works, and no ring is in use on our side.
     */
    @ParameterizedTest
    @ValueSource(ints = {4242, 65534})
    @Timeout(120)
    void aPeerOfAnotherUserStaysOnTcpAndTheLogSaysWhy(int uid) throws Exception {
        assumeTrue(UnixSockets.uid() == 0, "needs root to start a target as another user (CI runs as root)");
        Path classes = copyReadable(Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI()), "classes");
        Path testClasses = copyReadable(Path.of(HostileTargetMain.class.getProtectionDomain().getCodeSource().getLocation()
                .toURI()), "test-classes");
        Path log = temp.resolve("target.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
                java, "-XX:-UsePerfData", "-Xmx64m", "--enable-native-access=ALL-UNNAMED", "-cp",
                classes + ":" + testClasses, HostileTargetMain.class.getName(), "shm", "64"));
        Process target = new ProcessBuilder(command).redirectError(log.toFile()).start();
        try {
            String line = new BufferedReader(new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8)).readLine();
            assertTrue(line != null && line.startsWith("ready "), "the target did not start: " + line + "\n"
                    + Files.readString(log));
            InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    Integer.parseInt(line.substring(6).trim()));
            long ringsBefore = TcpQueuePair.RING_CONNECTIONS.get();
            try (Rdma rdma = Rdma.builder().provider("shm").build();
                 Connection c = rdma.connect(address);
                 LocalRegion into = rdma.allocate(8)) {
                RemoteRegion exposed = RemoteRegion.fromDescriptor(c.peerPrivateData());
                c.readSync(exposed.slice(0, 8), into);
                assertEquals(0L, into.segment().get(ValueLayout.JAVA_LONG, 0));
                assertEquals(ringsBefore, TcpQueuePair.RING_CONNECTIONS.get(), "no ring: the peer is not of our user");
            }
            String said = Files.readString(log);
            assertTrue(said.contains(uid == 65534 ? "runs as uid 65534, the kernel's overflow uid"
                    : "runs as uid 0, not as ours (" + uid + ")"), "the target's log says why: " + said);
        } finally {
            target.getOutputStream().close();
            if (!target.waitFor(10, TimeUnit.SECONDS)) {
                target.destroyForcibly();
            }
        }
    }

    /**
     * A server that relays a client's handshake to another server of the client's user on the
     * client's host (a hostile server A splicing victim V to S): S proves itself at V's
     * rendezvous with V's nonce, as V's own HELLO asks, and A passes S's ACCEPT on as its own.
     * The offer names the TCP connection it is for (S's, with A), which is not V's (with A): V
     * refuses the channel and says READY_TO_USE without rings, so V and S never share a ring
     * while each believes it talks to A.
     */
    @Test
    @Timeout(60)
    void aServerThatRelaysOurHandshakeToAnotherOfOurUsersGetsNoRings() throws Exception {
        try (HostilePeerTest.Target s = HostilePeerTest.Target.start("shm");
             ServerSocketChannel relay = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             Rdma v = Rdma.builder().provider("shm").build()) {
            InetSocketAddress a = (InetSocketAddress) relay.getLocalAddress();
            CompletableFuture<Connection> victim = CompletableFuture.supplyAsync(() -> v.connect(a));
            try (RawPeer fromV = RawPeer.accepted(relay.accept()); RawPeer toS = RawPeer.open(s.address)) {
                byte[] vh = fromV.readFully(TcpHandshake.HEADER_SIZE, 5_000);
                assertEquals(TcpHandshake.HELLO, TcpHandshake.checkHeader(vh));
                byte[] vBody = fromV.readFully(TcpHandshake.bodyLength(vh), 5_000);
                assertTrue(TcpHandshake.decodeHello(vBody).rendezvous().length > 0, "V names its rendezvous");
                toS.writeFully(ByteBuffer.wrap(concat(vh, vBody)), 5_000);   // V's HELLO, as is, to S
                byte[] sh = toS.readFully(TcpHandshake.HEADER_SIZE, 5_000);
                assertEquals(TcpHandshake.ACCEPT, TcpHandshake.checkHeader(sh));
                byte[] sBody = toS.readFully(TcpHandshake.bodyLength(sh), 5_000);
                assertEquals(TcpHandshake.SAME_HOST_OFFERED, TcpHandshake.decodeHello(sBody).flags(),
                        "S proved itself at V's rendezvous, as V's HELLO asked");
                fromV.writeFully(ByteBuffer.wrap(concat(sh, sBody)), 5_000);   // S's ACCEPT, as A's, to V
                byte[] rh = fromV.readFully(TcpHandshake.HEADER_SIZE, 5_000);
                assertEquals(TcpHandshake.READY_TO_USE, TcpHandshake.checkHeader(rh));
                assertArrayEquals(new byte[] {0}, fromV.readFully(TcpHandshake.bodyLength(rh), 5_000),
                        "V refused a channel offered for another TCP connection: no rings");
            }
            victim.handle((c, e) -> c).get(10, TimeUnit.SECONDS);   // settled: connected (then dropped) or failed
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }

    /** Sends a HELLO that claims this host with {@code name} and {@code nonce}; the decoded ACCEPT. */
    private static TcpHandshake.Hello hello(RawPeer p, byte[] name, byte[] nonce) throws IOException {
        p.writeFully(ByteBuffer.wrap(TcpHandshake.hello(TcpHandshake.HELLO, SPEC, TcpDevice.readBootId(), name, nonce, 0,
                new byte[0])), 5_000);
        byte[] h = p.readFully(TcpHandshake.HEADER_SIZE, 5_000);
        assertEquals(TcpHandshake.ACCEPT, TcpHandshake.checkHeader(h));
        return TcpHandshake.decodeHello(p.readFully(TcpHandshake.bodyLength(h), 5_000));
    }

    /**
     * Nothing in the target's address space is a mapping of {@code canary}, nor a memfd of any
     * name but the provider's own ("jrdma").
     */
    private static void assertNothingForeignMapped(HostilePeerTest.Target target, Path canary) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/" + target.process.pid() + "/maps"))) {
            if (canary != null) {
                assertFalse(line.contains(canary.toString()), "the canary is mapped: " + line);
            }
            if (line.contains("/memfd:")) {
                assertTrue(line.contains("/memfd:jrdma "), "a memfd that is not the provider's: " + line);
            }
        }
    }

    private static byte[] rendezvousName() {
        StringBuilder s = new StringBuilder("jrdma-shm.");
        for (int i = 0; i < 32; i++) {
            s.append(Character.forDigit(RANDOM.nextInt(16), 16));
        }
        return s.toString().getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] randomNonce() {
        byte[] n = new byte[16];
        RANDOM.nextBytes(n);
        return n;
    }

    /** The descriptor this process opened {@code file} with (its FileChannel is open): found through /proc/self/fd. */
    private static int fdOf(Path file) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    if (Files.readSymbolicLink(fd).equals(file.toRealPath())) {
                        return Integer.parseInt(fd.getFileName().toString());
                    }
                } catch (IOException ignored) {
                    // the listing's own fd, gone by now
                }
            }
        }
        throw new IOException("no fd of " + file);
    }

    /** A copy of a class directory that any user can read (the build's may be under a private home). */
    private Path copyReadable(Path from, String as) throws IOException {
        temp.toFile().setReadable(true, false);
        temp.toFile().setExecutable(true, false);
        Path to = temp.resolve(as);
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : files.toList()) {
                Path t = to.resolve(from.relativize(f).toString());
                if (Files.isDirectory(f)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(f, t);
                }
                t.toFile().setReadable(true, false);
                t.toFile().setExecutable(Files.isDirectory(t), false);
            }
        }
        return to;
    }
}
