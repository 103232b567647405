package dev.jrdma.provider.tcp;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;

import dev.jrdma.Access;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.provider.shm.SharedByteRing;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * Coverage-guided fuzzing (Jazzer) of what a peer controls: frames after the handshake (parsed and
 * applied by a real server on its IO thread), the handshake decoder, and the shared ring's
 * consumer and producer with positions a peer writes. Without JAZZER_FUZZ=1 each runs its
 * seed inputs (a regression test); with it, it fuzzes (scripts/fuzz). Passes when nothing but the
 * documented refusals (IllegalArgumentException for a bad handshake, -1 for impossible ring
 * positions) comes out, and the guard bytes around the ring never change.
 */
class WireFuzzTest {
    private static final int PAGE = 4096;
    private static Rdma server;
    private static RdmaServer listener;
    private static Arena arena;
    private static MemorySegment memory;
    private static byte[] pattern;
    private static RemoteRegion window;

    /** One server for every input: a registered page between two guard pages of a known pattern. */
    private static synchronized void startServer() {
        if (server != null) {
            return;
        }
        // Every input is an attack from 127.0.0.1: the server must look at each one, not make it wait.
        server = Rdma.builder().provider("tcp").sourcePenalties(false).build();
        arena = Arena.ofShared();
        memory = arena.allocate(3L * PAGE, PAGE);
        for (long i = 0; i < memory.byteSize(); i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
        }
        pattern = memory.toArray(ValueLayout.JAVA_BYTE);
        LocalRegion w = server.register(memory.asSlice(PAGE, PAGE), Access.values());
        window = w.toRemote();
        listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
    }

    /** The server goes with the class: other tests of this JVM count threads and fds. */
    @AfterAll
    static synchronized void stopServer() {
        if (server != null) {
            server.close();
            arena.close();
            server = null;
        }
    }

    /**
     * Frames after a handshake, as a peer may send them: types (valid and not), flags, lengths,
     * sequence numbers, keys and addresses around the one registered window, with payloads. The
     * server's IO thread parses and applies them; nothing of them may throw there (the queue
     * pair's exception barrier counts it) or touch the guard pages.
     */
    @FuzzTest(maxDuration = "10s")
    void framesFromAPeer(FuzzedDataProvider data) throws Exception {
        startServer();
        long failuresBefore = TcpQueuePair.INTERNAL_FAILURES.get();
        byte[] types = {TcpFrameDescriptor.SEND, TcpFrameDescriptor.WRITE, TcpFrameDescriptor.READ_REQUEST,
            TcpFrameDescriptor.COMPARE_SWAP, TcpFrameDescriptor.FETCH_ADD, TcpFrameDescriptor.FLUSH, TcpFrameDescriptor.ACK,
            TcpFrameDescriptor.NAK, TcpFrameDescriptor.READ_RESPONSE, TcpFrameDescriptor.ATOMIC_RESPONSE,
            TcpFrameDescriptor.RNR_WAIT, TcpFrameDescriptor.DISCONNECT, TcpFrameDescriptor.MAP_REQUEST,
            TcpFrameDescriptor.MAP_RESPONSE, TcpFrameDescriptor.UNMAP, TcpFrameDescriptor.UNMAP_ACK};
        try (RawPeer p = RawPeer.connect(listener.address())) {
            ByteBuffer out = ByteBuffer.allocate(64 * 1024);
            long seq = 0;
            for (int frames = data.consumeInt(1, 12); frames > 0 && out.remaining() > 1024; frames--) {
                byte type = data.consumeBoolean() ? data.pickValue(types) : data.consumeByte();
                int length = data.consumeBoolean() ? data.consumeInt(0, 512) : data.consumeInt();
                long s = data.consumeBoolean() ? ++seq : data.consumeLong();
                long addr = data.consumeBoolean() ? window.address() + data.consumeLong(-PAGE, 2L * PAGE) : data.consumeLong();
                int rkey = data.consumeBoolean() ? window.rkey() : data.consumeInt();
                out.put(p.frame(type, data.consumeInt(0, 255), length, s, addr, rkey, data.consumeInt(),
                        data.consumeBoolean() ? data.consumeLong(-16, 1024) : data.consumeLong(), data.consumeLong()));
                byte[] payload = data.consumeBytes(Math.max(0, Math.min(length, 512)));
                out.put(payload);
            }
            out.flip();
            p.writeFully(out, 1_000);
            p.closedWithin(50);   // let the server read it (it answers, refuses, or closes)
        }
        // Frames that reach the window legitimately may change it; the guard pages never.
        for (int i = 0; i < PAGE; i++) {
            if (memory.get(ValueLayout.JAVA_BYTE, i) != pattern[i]
                    || memory.get(ValueLayout.JAVA_BYTE, 2L * PAGE + i) != pattern[2 * PAGE + i]) {
                throw new AssertionError("a guard byte at " + i + " of a guard page changed");
            }
        }
        if (TcpQueuePair.INTERNAL_FAILURES.get() != failuresBefore) {
            throw new AssertionError("a frame made the server's progress throw (see the log)");
        }
    }

    @FuzzTest(maxDuration = "10s")
    void handshakeDecoding(byte[] input) {
        try {
            if (input.length >= TcpHandshake.HEADER_SIZE) {
                TcpHandshake.checkHeader(java.util.Arrays.copyOf(input, TcpHandshake.HEADER_SIZE));
            }
            TcpHandshake.decodeHello(input);
        } catch (IllegalArgumentException refused) {
            // the only way a bad handshake may end
        }
    }

    @FuzzTest(maxDuration = "10s")
    void ringPositionsFromAPeer(FuzzedDataProvider data) {
        try (Arena arena = Arena.ofConfined()) {
            int capacity = 64 + data.consumeInt(0, 4096);
            MemorySegment all = arena.allocate(SharedByteRing.HEADER + capacity + 128, 64);
            all.fill((byte) 0x5A);
            MemorySegment ring = all.asSlice(64, SharedByteRing.HEADER + capacity);
            ring.fill((byte) 0);
            ring.set(ValueLayout.JAVA_LONG, 0, data.consumeLong());    // produced, as a peer wrote it
            ring.set(ValueLayout.JAVA_LONG, 64, data.consumeLong());   // consumed, as a peer wrote it
            SharedByteRing r = new SharedByteRing(ring);
            MemorySegment buf = arena.allocate(8192);
            long n = r.read(buf.address(), data.consumeInt(0, 8192));
            if (n < -1 || n > capacity) {
                throw new AssertionError("read returned " + n);
            }
            long w = r.write(buf.address(), data.consumeInt(0, 8192), data.consumeLong());
            if (w < -1 || w > capacity) {
                throw new AssertionError("write returned " + w);
            }
            for (long i = 0; i < 64; i++) {
                if (all.get(ValueLayout.JAVA_BYTE, i) != 0x5A
                        || all.get(ValueLayout.JAVA_BYTE, 64 + SharedByteRing.HEADER + capacity + i) != 0x5A) {
                    throw new AssertionError("a guard byte around the ring changed");
                }
            }
        }
    }
}
