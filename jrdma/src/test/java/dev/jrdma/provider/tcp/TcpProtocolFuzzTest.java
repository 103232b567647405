package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Access;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes the tcp wire protocol from a raw socket: garbage, truncated frames, lying lengths,
 * keys and addresses out of range, unsolicited responses, broken handshakes. Each victim
 * connection must end (the server closes it, or refuses the request with a NAK); the guard
 * bytes around the only registered window must never change; and a well-behaved client
 * connection keeps working through it all. Seeded: a failure names its case and seed.
 */
class TcpProtocolFuzzTest {
    private static final int PAGE = 4096;
    /** Fixed for CI; another with JRDMA_FUZZ_SEED=N. */
    private static final long SEED = System.getenv("JRDMA_FUZZ_SEED") != null
            ? Long.parseLong(System.getenv("JRDMA_FUZZ_SEED")) : 20261123L;
    private static final int CASES = 300;
    private static final long BUDGET_NANOS = TimeUnit.SECONDS.toNanos(60);

    private enum Outcome { CLOSED, NAK, ANSWERED }

    @Test
    @Timeout(180)
    void garbageAndLiesEndTheVictimConnectionAndTouchNothingOutsideTheRegion() throws Exception {
        Random random = new Random(SEED);
        try (Arena arena = Arena.ofShared();
             Rdma server = Rdma.builder().provider("tcp").sourcePenalties(false).build();   // attacks on purpose
             Rdma client = Rdma.builder().provider("tcp").build()) {
            // One registered page between two guard pages of a known pattern.
            MemorySegment all = arena.allocate(3L * PAGE, PAGE);
            for (long i = 0; i < all.byteSize(); i++) {
                all.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            }
            byte[] guards = all.toArray(ValueLayout.JAVA_BYTE);
            LocalRegion window = server.register(all.asSlice(PAGE, PAGE), Access.values());
            RemoteRegion rr = window.toRemote();
            RdmaServer l = server.listen(new InetSocketAddress("127.0.0.1", 0), c -> { });

            Connection good = client.connect(l.address());
            LocalRegion buf = client.allocate(64);
            byte[] seen = new byte[64];

            List<String> outcomes = new ArrayList<>();
            long start = System.nanoTime();
            int cases = 0;
            for (; cases < CASES && System.nanoTime() - start < BUDGET_NANOS; cases++) {
                int kind = random.nextInt(10);
                long caseSeed = random.nextLong();
                Outcome o = attack(l.address(), kind, new Random(caseSeed), rr);
                outcomes.add(kind + ":" + o);
                // Frames that reach the window legitimately (in bounds, right key) are allowed to
                // change it; restore our pattern, then check the guards.
                MemorySegment.copy(MemorySegment.ofArray(guards), PAGE, all, PAGE, PAGE);
                byte[] now = all.toArray(ValueLayout.JAVA_BYTE);
                assertArrayEquals(guards, now, "case " + cases + " (kind " + kind + ", seed " + caseSeed
                        + ") touched memory outside the registered window");
                // The well-behaved connection goes on: a write and a read back, checked.
                if (cases % 10 == 0) {
                    buf.segment().fill((byte) cases);
                    RemoteRegion tail = rr.slice(PAGE - 64, 64);
                    good.writeSync(buf, tail);
                    LocalRegion back = client.allocate(64);
                    good.readSync(tail, back);
                    java.util.Arrays.fill(seen, (byte) cases);
                    assertArrayEquals(seen, back.segment().toArray(ValueLayout.JAVA_BYTE), "case " + cases);
                    back.close();
                    assertEquals(ConnectionState.ESTABLISHED, good.state());
                }
            }
            System.out.println("TcpProtocolFuzzTest: " + cases + " cases (seed " + SEED + "): " + summary(outcomes));
            assertTrue(cases >= 50, "at least 50 cases ran in the time budget: " + cases);
            // Victims do not linger on the server: only the good connection is left.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (l.connections().size() > 1 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(1, l.connections().size(), "victims closed: " + l.connections());
        }
    }

    private static String summary(List<String> outcomes) {
        java.util.TreeMap<String, Integer> m = new java.util.TreeMap<>();
        outcomes.forEach(o -> m.merge(o, 1, Integer::sum));
        return m.toString();
    }

    /** One victim connection: the handshake (or a broken one), then one kind of lie. */
    private static Outcome attack(InetSocketAddress server, int kind, Random r, RemoteRegion rr) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(server, 5000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            DataInputStream in = new DataInputStream(s.getInputStream());
            if (kind == 0) {   // garbage instead of a handshake (a header's worth at least: less, and it waits)
                out.write(randomBytes(r, TcpHandshake.HEADER_SIZE + r.nextInt(200)));
                return awaitEnd(in, true);
            }
            if (kind == 1) {   // a HELLO header that lies about its body, then a truncated body
                byte[] h = TcpHandshake.header(TcpHandshake.HELLO, r.nextBoolean() ? -1 - r.nextInt(1000)
                        : TcpHandshake.MAX_BODY + 1 + r.nextInt(1 << 20));
                out.write(h);
                out.write(randomBytes(r, r.nextInt(64)));
                return awaitEnd(in, true);
            }
            handshake(out, in);
            ByteBuffer f = ByteBuffer.allocate(TcpFrameDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            long addr = rr.address();
            switch (kind) {
                case 2 -> out.write(randomBytes(r, TcpFrameDescriptor.HEADER_SIZE + r.nextInt(300)));   // garbage frames
                case 3 -> {                                                                   // truncated frame, then gone
                    out.write(frame(f, TcpFrameDescriptor.WRITE, 0, 100, 1, addr, rr.rkey(), 0, 0).array(), 0,
                            1 + r.nextInt(TcpFrameDescriptor.HEADER_SIZE - 1));
                    return Outcome.CLOSED;
                }
                case 4 -> out.write(frame(f, TcpFrameDescriptor.WRITE, 0, -1 - r.nextInt(1 << 30), 1, addr, rr.rkey(), 0,
                        0).array());                                                              // negative length
                case 5 -> {                                                                   // out of bounds / wrong key
                    int len = 1 + r.nextInt(2 * PAGE);
                    long at = addr - PAGE + r.nextInt(3 * PAGE);
                    int key = r.nextBoolean() ? rr.rkey() : r.nextInt();
                    boolean inside = key == rr.rkey() && at >= addr && at + len <= addr + PAGE;
                    out.write(frame(f, TcpFrameDescriptor.WRITE, TcpFrameDescriptor.FLAG_ACK_REQUESTED, len, 1, at, key,
                            0, 0).array());
                    out.write(randomBytes(r, len));
                    return expect(in, inside ? Outcome.ANSWERED : Outcome.NAK);
                }
                case 6 -> {                                                                   // reads out of range
                    long len = r.nextBoolean() ? 1 + r.nextInt(2 * PAGE) : -1 - r.nextInt(10);
                    long at = addr - PAGE + r.nextInt(3 * PAGE);
                    out.write(frame(f, TcpFrameDescriptor.READ_REQUEST, 0, 0, 1, at, r.nextInt(), 0, len).array());
                    return expect(in, Outcome.NAK);
                }
                case 7 -> {                                                                   // misaligned / outside atomics
                    long at = addr + 1 + r.nextInt(7) + (r.nextBoolean() ? 0 : PAGE);
                    out.write(frame(f, r.nextBoolean() ? TcpFrameDescriptor.FETCH_ADD : TcpFrameDescriptor.COMPARE_SWAP, 0,
                            0, 1, at, rr.rkey(), 0, 1).array());
                    return expect(in, Outcome.NAK);
                }
                case 8 -> {                                                                   // answers to nothing
                    byte type = new byte[] {TcpFrameDescriptor.ACK, TcpFrameDescriptor.NAK, TcpFrameDescriptor.READ_RESPONSE,
                        TcpFrameDescriptor.ATOMIC_RESPONSE}[r.nextInt(4)];
                    out.write(frame(f, type, 0, type == TcpFrameDescriptor.READ_RESPONSE ? 8 : 0, 1 + r.nextInt(1000), 0, 0,
                            0, 0).array());
                    out.write(new byte[8]);
                }
                default -> {                                                                  // out-of-order sequence, unknown type
                    out.write(frame(f, r.nextBoolean() ? (byte) (40 + r.nextInt(200)) : TcpFrameDescriptor.SEND, 0, 0,
                            2 + r.nextInt(1000), 0, 0, 0, 0).array());
                }
            }
            return awaitEnd(in, false);
        }
    }

    private static ByteBuffer frame(ByteBuffer f, byte type, int flags, int length, long seq, long addr, int rkey,
                                    int imm, long compareAdd) {
        f.clear();
        f.put(type).put((byte) flags).putShort((short) 0).putInt(length).putLong(seq).putLong(addr).putInt(rkey)
                .putInt(imm).putLong(compareAdd).putLong(0);
        return f;
    }

    private static void handshake(OutputStream out, DataInputStream in) throws IOException {
        QueuePairSpec spec = new QueuePairSpec(16, 16, 1, 1, 0, 16, 16, 7, 6);
        out.write(TcpHandshake.hello(TcpHandshake.HELLO, spec, new byte[16], new byte[0]));
        byte[] h = new byte[TcpHandshake.HEADER_SIZE];
        in.readFully(h);
        assertEquals(TcpHandshake.ACCEPT, TcpHandshake.checkHeader(h), "the server accepts");
        in.readFully(new byte[TcpHandshake.bodyLength(h)]);
        out.write(TcpHandshake.readyToUse(false));
    }

    /** Reads until the server closes (true when that is required) or answers; a time-out fails. */
    private static Outcome awaitEnd(DataInputStream in, boolean mustClose) throws IOException {
        byte[] h = new byte[TcpFrameDescriptor.HEADER_SIZE];
        try {
            while (true) {
                in.readFully(h);
                byte type = h[0];
                if (type == TcpFrameDescriptor.NAK && !mustClose) {
                    return Outcome.NAK;
                }
            }
        } catch (java.io.EOFException | java.net.SocketException e) {
            return Outcome.CLOSED;
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server neither closed the victim connection nor refused its frame in 5 s");
        }
    }

    /** The frame must be refused with a NAK (access or invalid request), or answered when legitimate. */
    private static Outcome expect(DataInputStream in, Outcome wanted) throws IOException {
        byte[] h = new byte[TcpFrameDescriptor.HEADER_SIZE];
        try {
            in.readFully(h);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no answer in 5 s; wanted " + wanted);
        }
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        byte type = b.get(0);
        if (wanted == Outcome.NAK) {
            assertEquals(TcpFrameDescriptor.NAK, type, "refused with a NAK, not " + TcpFrameDescriptor.typeName(type));
            int status = Short.toUnsignedInt(b.getShort(2));
            assertTrue(status == WorkCompletion.REM_ACCESS_ERR || status == WorkCompletion.REM_INV_REQ_ERR,
                    "status " + WorkCompletion.statusName(status));
        } else {
            assertEquals(TcpFrameDescriptor.ACK, type, "a legitimate write is acknowledged");
        }
        return wanted;
    }

    private static byte[] randomBytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

}
