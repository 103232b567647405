package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_LOCAL_WRITE;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_ATOMIC;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_READ;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The RC data path on real verbs (rxe0 ↔ rxe1 in the Soft-RoCE VM): every operation checked
 * byte for byte, every completion's status, opcode and length checked, and no extra completion.
 */
@Tag("verbs")
class VerbsDataPathTest {
    private static final int SIZE = 8192;
    private static final int TIMEOUT_MS = 20_000;
    private static final int ALL = ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC;
    private static RcPair pair;

    @BeforeAll
    static void connect() {
        pair = RcPair.connect();
    }

    @AfterAll
    static void disconnect() {
        if (pair != null) {
            pair.close();
        }
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void sendArrivesInAPostedReceive() {
        MemorySegment recv = pair.server.register(SIZE, ACCESS_LOCAL_WRITE);
        MemorySegment src = pair.client.register(SIZE, ACCESS_LOCAL_WRITE);
        byte[] data = pattern(3000, 1);
        RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(data));
        assertEquals(0, pair.server.postRecv(11, recv));
        assertEquals(0, pair.client.postSend(12, IbvSendWr.WR_SEND, src, 0, data.length, 0, 0, 0, 0, 0));

        RcEndpoint.Wc sent = pair.client.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", sent.statusName());
        assertEquals(12, sent.wrId());
        assertEquals(IbvWc.OP_SEND, sent.opcode());
        RcEndpoint.Wc got = pair.server.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", got.statusName());
        assertEquals(11, got.wrId());
        assertEquals(IbvWc.OP_RECV, got.opcode());
        assertEquals(data.length, got.byteLen());
        assertEquals(0, got.wcFlags() & IbvWc.WITH_IMM, "plain send carries no immediate");
        assertArrayEquals(data, RcEndpoint.bytes(recv).asSlice(0, data.length).toArray(ValueLayout.JAVA_BYTE));
        assertEquals(0, pair.client.drainExtra(50) + pair.server.drainExtra(50), "one completion per request");
    }

    @Test
    void writeChangesRemoteMemoryExactly() {
        MemorySegment target = pair.server.register(SIZE, ALL);
        MemorySegment src = pair.client.register(SIZE, ACCESS_LOCAL_WRITE);
        byte[] data = pattern(5000, 2);
        RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(data));
        int offset = 100;
        assertEquals(0, pair.client.postSend(21, IbvSendWr.WR_RDMA_WRITE, src, 0, data.length,
                IbvMr.addr(target) + offset, IbvMr.rkey(target), 0, 0, 0));
        RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", wc.statusName());
        assertEquals(IbvWc.OP_RDMA_WRITE, wc.opcode());
        byte[] after = RcEndpoint.bytes(target).toArray(ValueLayout.JAVA_BYTE);
        byte[] expected = new byte[SIZE];
        System.arraycopy(data, 0, expected, offset, data.length);
        assertArrayEquals(expected, after, "exactly the written bytes changed");
        assertEquals(0, pair.server.drainExtra(50), "a plain write consumes no receive and completes nothing remotely");
    }

    @Test
    void writeWithImmDeliversImmediateInReceiverCompletion() {
        MemorySegment target = pair.server.register(SIZE, ALL);
        MemorySegment recv = pair.server.register(64, ACCESS_LOCAL_WRITE);
        MemorySegment src = pair.client.register(SIZE, ACCESS_LOCAL_WRITE);
        byte[] data = pattern(1024, 3);
        RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(data));
        int imm = 0xCAFE_F00D;
        assertEquals(0, pair.server.postRecv(31, recv));
        assertEquals(0, pair.client.postSend(32, IbvSendWr.WR_RDMA_WRITE_WITH_IMM, src, 0, data.length,
                IbvMr.addr(target), IbvMr.rkey(target), imm, 0, 0));
        assertEquals("IBV_WC_SUCCESS", pair.client.pollOne(TIMEOUT_MS).statusName());
        RcEndpoint.Wc got = pair.server.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", got.statusName());
        assertEquals(31, got.wrId());
        assertEquals(IbvWc.OP_RECV_RDMA_WITH_IMM, got.opcode());
        assertTrue((got.wcFlags() & IbvWc.WITH_IMM) != 0, "IBV_WC_WITH_IMM set");
        assertEquals(imm, got.imm(), "immediate data in host order");
        assertEquals(data.length, got.byteLen());
        assertArrayEquals(data, RcEndpoint.bytes(target).asSlice(0, data.length).toArray(ValueLayout.JAVA_BYTE));
    }

    @Test
    void readFetchesRemoteMemory() {
        MemorySegment remote = pair.server.register(SIZE, ALL);
        byte[] data = pattern(SIZE, 4);
        RcEndpoint.bytes(remote).copyFrom(MemorySegment.ofArray(data));
        MemorySegment local = pair.client.register(SIZE, ACCESS_LOCAL_WRITE);
        assertEquals(0, pair.client.postSend(41, IbvSendWr.WR_RDMA_READ, local, 0, SIZE - 512,
                IbvMr.addr(remote) + 512, IbvMr.rkey(remote), 0, 0, 0));
        RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", wc.statusName());
        assertEquals(IbvWc.OP_RDMA_READ, wc.opcode());
        assertEquals(SIZE - 512, wc.byteLen());
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 512, SIZE),
                RcEndpoint.bytes(local).asSlice(0, SIZE - 512).toArray(ValueLayout.JAVA_BYTE));
    }

    @Test
    void compareAndSwapReturnsPriorValueAndSwapsOnlyOnMatch() {
        MemorySegment remote = pair.server.register(64, ALL);
        MemorySegment word = RcEndpoint.bytes(remote);
        word.set(ValueLayout.JAVA_LONG, 8, 0x1111_2222_3333_4444L);
        MemorySegment result = pair.client.register(8, ACCESS_LOCAL_WRITE);
        long at = IbvMr.addr(remote) + 8;

        assertEquals(0, pair.client.postSend(51, IbvSendWr.WR_ATOMIC_CMP_AND_SWP, result, 0, 8, at,
                IbvMr.rkey(remote), 0, 0x1111_2222_3333_4444L, 42L));
        RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
        assertEquals("IBV_WC_SUCCESS", wc.statusName());
        assertEquals(IbvWc.OP_COMP_SWAP, wc.opcode());
        assertEquals(0x1111_2222_3333_4444L, RcEndpoint.bytes(result).get(ValueLayout.JAVA_LONG, 0), "prior value");
        assertEquals(42L, word.get(ValueLayout.JAVA_LONG, 8), "swapped");

        // A compare that does not match leaves memory alone and still returns the prior value.
        assertEquals(0, pair.client.postSend(52, IbvSendWr.WR_ATOMIC_CMP_AND_SWP, result, 0, 8, at,
                IbvMr.rkey(remote), 0, 7L, 99L));
        assertEquals("IBV_WC_SUCCESS", pair.client.pollOne(TIMEOUT_MS).statusName());
        assertEquals(42L, RcEndpoint.bytes(result).get(ValueLayout.JAVA_LONG, 0));
        assertEquals(42L, word.get(ValueLayout.JAVA_LONG, 8), "no swap on mismatch");
        assertEquals(0L, word.get(ValueLayout.JAVA_LONG, 0), "neighbour untouched");
        assertEquals(0L, word.get(ValueLayout.JAVA_LONG, 16), "neighbour untouched");
    }

    @Test
    void fetchAndAddReturnsPriorValueAndAdds() {
        MemorySegment remote = pair.server.register(64, ALL);
        MemorySegment word = RcEndpoint.bytes(remote);
        word.set(ValueLayout.JAVA_LONG, 0, 1000L);
        MemorySegment result = pair.client.register(8, ACCESS_LOCAL_WRITE);
        for (int i = 0; i < 3; i++) {
            assertEquals(0, pair.client.postSend(60 + i, IbvSendWr.WR_ATOMIC_FETCH_AND_ADD, result, 0, 8,
                    IbvMr.addr(remote), IbvMr.rkey(remote), 0, 5L, 0));
            RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
            assertEquals("IBV_WC_SUCCESS", wc.statusName());
            assertEquals(IbvWc.OP_FETCH_ADD, wc.opcode());
            assertEquals(1000L + 5L * i, RcEndpoint.bytes(result).get(ValueLayout.JAVA_LONG, 0), "prior value");
        }
        assertEquals(1015L, word.get(ValueLayout.JAVA_LONG, 0));
    }

    @Test
    void manyWritesInFlightEachCompleteOnceInOrder() {
        MemorySegment target = pair.server.register(SIZE, ALL);
        MemorySegment src = pair.client.register(SIZE, ACCESS_LOCAL_WRITE);
        byte[] data = pattern(SIZE, 5);
        RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(data));
        int n = 32;
        int chunk = SIZE / n;
        for (int i = 0; i < n; i++) {
            assertEquals(0, pair.client.postSend(1000 + i, IbvSendWr.WR_RDMA_WRITE, src, (long) i * chunk, chunk,
                    IbvMr.addr(target) + (long) i * chunk, IbvMr.rkey(target), 0, 0, 0));
        }
        var wcs = pair.client.poll(n, TIMEOUT_MS);
        for (int i = 0; i < n; i++) {
            assertEquals("IBV_WC_SUCCESS", wcs.get(i).statusName());
            assertEquals(1000 + i, wcs.get(i).wrId(), "RC completes in order");
        }
        assertEquals(0, pair.client.drainExtra(50));
        assertArrayEquals(data, RcEndpoint.bytes(target).toArray(ValueLayout.JAVA_BYTE));
    }
}
