package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.exceptions.ConnectionRejectedException;

import java.io.File;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * jrdma and C programs written against librdmacm, on real verbs, both ways: rdmacm-utils' {@code
 * rping} (a SEND advertises a buffer, the server RDMA-READs it, a SEND advertises a sink, the
 * server RDMA-WRITEs the data back, each step acknowledged by a 16-byte SEND; the client checks
 * the data) and librdmacm's examples {@code rdma_server}/{@code rdma_client} (one 16-byte SEND
 * each way). The C peers send no jrdma private data and read none; jrdma puts nothing of its own
 * in the messages, reads and writes, so each side sees only the other's protocol.
 */
@Tag("verbs")
class CPeerInteropVerbsTest {
    private static final long T = 60;   // seconds, for every wait
    private static final int PINGS = 3, SIZE = 64;
    /** rping's {@code struct rping_rdma_info}: buf, rkey, size, big-endian. */
    private static final int ADVERT = 16;
    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** rping -c against a jrdma listener that serves rping's side: read, go ahead, write, go ahead. */
    @Test
    void rpingClientAgainstAJrdmaServer() throws Exception {
        InetSocketAddress at = VerbsTestAddresses.nextServerAddress();
        File log = File.createTempFile("rping-client", ".log");
        try (Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.serverDevice()).build()) {
            LinkedBlockingQueue<Connection> accepted = new LinkedBlockingQueue<>();
            try (RdmaServer server = rdma.listen(at, ConnectionConfig.defaults(), accepted::add)) {
                Process rping = new ProcessBuilder("rping", "-c", "-a", at.getAddress().getHostAddress(), "-p",
                        String.valueOf(at.getPort()), "-C", String.valueOf(PINGS), "-S", String.valueOf(SIZE), "-v")
                        .redirectErrorStream(true).redirectOutput(log).start();
                try {
                    Connection c = accepted.poll(T, TimeUnit.SECONDS);
                    assertNotNull(c, "rping connected: " + output(log));
                    LocalRegion data = rdma.allocate(SIZE);
                    LocalRegion goAhead = rdma.allocate(ADVERT);
                    for (int i = 0; i < PINGS; i++) {
                        RemoteRegion source = advert(c.receive());
                        assertEquals(SIZE, source.length(), "the buffer rping advertised");
                        c.read(source, data).get(T, TimeUnit.SECONDS);
                        String text = new String(data.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
                        assertTrue(text.startsWith("rdma-ping-" + i + ": "), "what rping put in its buffer: " + text);
                        c.send(goAhead).get(T, TimeUnit.SECONDS);
                        RemoteRegion sink = advert(c.receive());
                        c.write(data, sink.slice(0, SIZE)).get(T, TimeUnit.SECONDS);
                        c.send(goAhead).get(T, TimeUnit.SECONDS);
                    }
                    assertTrue(rping.waitFor(T, TimeUnit.SECONDS), "rping ended: " + output(log));
                    // rping -v prints what it found in its sink after each write; a mismatch is "data mismatch!" and exit 1.
                    assertEquals(0, rping.exitValue(), output(log));
                    assertTrue(output(log).contains("ping data: rdma-ping-" + (PINGS - 1) + ": "), output(log));
                } finally {
                    rping.destroyForcibly();
                }
            }
        } finally {
            log.delete();
        }
    }

    /** A jrdma client against rping -s: advertises its buffer, then a sink, and finds the data back in it. */
    @Test
    void jrdmaClientAgainstAnRpingServer() throws Exception {
        InetSocketAddress at = VerbsTestAddresses.nextServerAddress();
        File log = File.createTempFile("rping-server", ".log");
        Process rping = new ProcessBuilder("rping", "-s", "-a", at.getAddress().getHostAddress(), "-p",
                String.valueOf(at.getPort()), "-S", String.valueOf(SIZE), "-v").redirectErrorStream(true).redirectOutput(log).start();
        try (Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.clientDevice()).build()) {
            Connection c = connectOnceListening(rdma, at, rping, log);
            LocalRegion start = rdma.allocate(SIZE);
            LocalRegion sink = rdma.allocate(SIZE);
            LocalRegion advert = rdma.allocate(ADVERT);
            for (int i = 0; i < PINGS; i++) {
                byte[] text = new byte[SIZE];   // as rping's client fills it: "rdma-ping-N: " then letters, NUL-ended
                byte[] head = ("rdma-ping-" + i + ": ").getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(head, 0, text, 0, head.length);
                for (int k = head.length; k < SIZE - 1; k++) {
                    text[k] = (byte) ('A' + (k + i) % 26);
                }
                start.segment().copyFrom(MemorySegment.ofArray(text));
                sink.segment().fill((byte) 0);
                CompletableFuture<Message> goAhead = c.receive();
                advertise(c, advert, start);
                take(goAhead);   // the server has read the buffer
                CompletableFuture<Message> written = c.receive();
                advertise(c, advert, sink);
                take(written);   // the server has written it back
                assertArrayEquals(text, sink.segment().toArray(ValueLayout.JAVA_BYTE), "ping " + i + " came back");
            }
            c.close();
            assertTrue(rping.waitFor(T, TimeUnit.SECONDS), "rping -s ended once the client left: " + output(log));
            assertEquals(0, rping.exitValue(), output(log));
            assertTrue(output(log).contains("server ping data: rdma-ping-" + (PINGS - 1) + ": "), output(log));
        } finally {
            rping.destroyForcibly();
            log.delete();
        }
    }

    /** librdmacm's rdma_client against a jrdma listener that answers each message with the same bytes. */
    @Test
    void rdmaClientAgainstAJrdmaServer() throws Exception {
        InetSocketAddress at = VerbsTestAddresses.nextServerAddress();
        File log = File.createTempFile("rdma-client", ".log");
        try (Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.serverDevice()).build()) {
            CompletableFuture<byte[]> received = new CompletableFuture<>();
            try (RdmaServer server = rdma.listen(at, ConnectionConfig.defaults(), c -> c.onReceive((conn, m) -> {
                byte[] bytes = m.data().toArray(ValueLayout.JAVA_BYTE);
                received.complete(bytes);
                LocalRegion reply = rdma.allocate(bytes.length);
                reply.segment().copyFrom(MemorySegment.ofArray(bytes));
                conn.send(reply).whenComplete((v, e) -> reply.close());
            }))) {
                Process client = new ProcessBuilder("rdma_client", "-s", at.getAddress().getHostAddress(), "-p",
                        String.valueOf(at.getPort())).redirectErrorStream(true).redirectOutput(log).start();
                try {
                    assertTrue(client.waitFor(T, TimeUnit.SECONDS), "rdma_client ended: " + output(log));
                    assertEquals(0, client.exitValue(), "rdma_client got its answer: " + output(log));
                    assertArrayEquals(new byte[16], received.get(T, TimeUnit.SECONDS), "rdma_client sends 16 zero bytes");
                } finally {
                    client.destroyForcibly();
                }
            }
        } finally {
            log.delete();
        }
    }

    /** A jrdma client against librdmacm's rdma_server, which answers one message with its own 16 bytes. */
    @Test
    void jrdmaClientAgainstAnRdmaServer() throws Exception {
        InetSocketAddress at = VerbsTestAddresses.nextServerAddress();
        File log = File.createTempFile("rdma-server", ".log");
        Process server = new ProcessBuilder("rdma_server", "-s", at.getAddress().getHostAddress(), "-p",
                String.valueOf(at.getPort())).redirectErrorStream(true).redirectOutput(log).start();
        try (Rdma rdma = Rdma.builder().provider("verbs").device(VerbsTestAddresses.clientDevice()).build()) {
            Connection c = connectOnceListening(rdma, at, server, log);
            LocalRegion msg = rdma.allocate(16);
            msg.segment().fill((byte) 0x5a);
            CompletableFuture<Message> answer = c.receive();
            c.send(msg).get(T, TimeUnit.SECONDS);
            try (Message m = answer.get(T, TimeUnit.SECONDS)) {
                assertArrayEquals(new byte[16], m.data().toArray(ValueLayout.JAVA_BYTE), "rdma_server answers 16 zero bytes");
            }
            assertTrue(server.waitFor(T, TimeUnit.SECONDS), "rdma_server ended after its one exchange: " + output(log));
            assertEquals(0, server.exitValue(), output(log));
        } finally {
            server.destroyForcibly();
            log.delete();
        }
    }

    /** Connects until the C server listens (a refusal until then), {@link #T} at most. */
    private static Connection connectOnceListening(Rdma rdma, InetSocketAddress at, Process server, File log) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (true) {
            try {
                return rdma.connect(at);
            } catch (ConnectionRejectedException e) {
                if (!server.isAlive() || System.nanoTime() > deadline) {
                    fail("the C server did not take the connection (" + e.getMessage() + "): " + output(log));
                }
                server.waitFor(200, TimeUnit.MILLISECONDS);   // it is starting: wait for it, or for its end
            }
        }
    }

    /** Sends rping's advertisement of {@code region}: its address, rkey and size, big-endian. */
    private static void advertise(Connection c, LocalRegion advert, LocalRegion region) throws Exception {
        RemoteRegion r = region.toRemote();
        advert.segment().set(BE_LONG, 0, r.address());
        advert.segment().set(BE_INT, 8, r.rkey());
        advert.segment().set(BE_INT, 12, (int) r.length());
        c.send(advert).get(T, TimeUnit.SECONDS);
    }

    /** The buffer an rping advertisement names. */
    private static RemoteRegion advert(CompletableFuture<Message> next) throws Exception {
        try (Message m = next.get(T, TimeUnit.SECONDS)) {
            assertEquals(ADVERT, m.byteCount(), "rping's advertisement is 16 bytes");
            MemorySegment d = m.data();
            return RemoteRegion.of(d.get(BE_LONG, 0), Integer.toUnsignedLong(d.get(BE_INT, 12)), d.get(BE_INT, 8));
        }
    }

    private static void take(CompletableFuture<Message> next) throws Exception {
        try (Message m = next.get(T, TimeUnit.SECONDS)) {
            assertEquals(ADVERT, m.byteCount(), "rping's go-ahead is 16 bytes");
        }
    }

    private static String output(File log) {
        try {
            return Files.readString(log.toPath());
        } catch (java.io.IOException e) {
            return "(" + e + ")";
        }
    }
}
