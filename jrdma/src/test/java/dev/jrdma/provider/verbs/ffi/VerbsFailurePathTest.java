package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_LOCAL_WRITE;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_READ;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.Errno;
import dev.jrdma.os.SockAddr;
import dev.jrdma.exceptions.NativeRdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * What goes wrong on real verbs, and how the bindings report it. Each case has its own
 * connection, since a remote access error moves the QP to the error state.
 */
@Tag("verbs")
class VerbsFailurePathTest {
    private static final int TIMEOUT_MS = 20_000;

    @Test
    void wrongRkeyCompletesWithRemoteAccessError() {
        try (RcPair pair = RcPair.connect()) {
            MemorySegment target = pair.server.register(4096, ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
            MemorySegment src = pair.client.register(4096, ACCESS_LOCAL_WRITE);
            RcEndpoint.bytes(src).fill((byte) 0x5A);
            int wrongRkey = IbvMr.rkey(target) ^ 0x00ff_ff00;
            assertEquals(0, pair.client.postSend(1, IbvSendWr.WR_RDMA_WRITE, src, 0, 256, IbvMr.addr(target),
                    wrongRkey, 0, 0, 0));
            RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
            assertEquals(1, wc.wrId());
            assertEquals("IBV_WC_REM_ACCESS_ERR", wc.statusName());
            assertEquals(0, RcEndpoint.bytes(target).get(ValueLayout.JAVA_BYTE, 0), "nothing was written");
            assertEquals("ERR", IbvQp.stateName(pair.client.queryState()), "the requester QP is in error");
        }
    }

    @Test
    void outOfBoundsWriteCompletesWithRemoteAccessError() {
        try (RcPair pair = RcPair.connect()) {
            MemorySegment target = pair.server.register(4096, ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
            MemorySegment src = pair.client.register(4096, ACCESS_LOCAL_WRITE);
            // 256 bytes starting 128 bytes before the end of the region.
            assertEquals(0, pair.client.postSend(2, IbvSendWr.WR_RDMA_WRITE, src, 0, 256,
                    IbvMr.addr(target) + 4096 - 128, IbvMr.rkey(target), 0, 0, 0));
            RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
            assertEquals("IBV_WC_REM_ACCESS_ERR", wc.statusName());
        }
    }

    @Test
    void readWithoutRemoteReadAccessCompletesWithRemoteAccessError() {
        try (RcPair pair = RcPair.connect()) {
            MemorySegment target = pair.server.register(4096, ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
            MemorySegment local = pair.client.register(4096, ACCESS_LOCAL_WRITE);
            assertEquals(0, pair.client.postSend(3, IbvSendWr.WR_RDMA_READ, local, 0, 64, IbvMr.addr(target),
                    IbvMr.rkey(target), 0, 0, 0));
            assertEquals("IBV_WC_REM_ACCESS_ERR", pair.client.pollOne(TIMEOUT_MS).statusName());
        }
    }

    @Test
    void postOnQpInErrorStateFails() {
        try (RcPair pair = RcPair.connect()) {
            MemorySegment src = pair.client.register(4096, ACCESS_LOCAL_WRITE);
            pair.client.moveToError();
            assertEquals("ERR", IbvQp.stateName(pair.client.queryState()));
            int rc = pair.client.postSend(4, IbvSendWr.WR_SEND, src, 0, 16, 0, 0, 0, 0, 0);
            if (rc == 0) {
                // The IB spec lets a post on an ERR QP be accepted and flushed: it must not succeed.
                RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
                assertEquals(4, wc.wrId());
                assertEquals("IBV_WC_WR_FLUSH_ERR", wc.statusName(), "a send on an ERR QP is flushed");
            } else {
                assertTrue(rc > 0, "ibv_post_send returns an errno, got " + rc);
            }
            assertEquals(0, pair.client.drainExtra(50), "exactly one outcome for the request");
        }
    }

    @Test
    void closingWithWorkOutstandingFlushesEveryRequestOnce() {
        try (RcPair pair = RcPair.connect()) {
            int n = 16;
            MemorySegment recv = pair.server.register(256, ACCESS_LOCAL_WRITE);
            for (int i = 0; i < n; i++) {
                assertEquals(0, pair.server.postRecv(500 + i, recv));
            }
            // What a careful close does first: move the QP to ERR so every posted request completes.
            pair.server.moveToError();
            List<RcEndpoint.Wc> flushed = pair.server.poll(n, TIMEOUT_MS);
            Set<Long> ids = new HashSet<>();
            for (RcEndpoint.Wc wc : flushed) {
                assertEquals("IBV_WC_WR_FLUSH_ERR", wc.statusName());
                assertTrue(ids.add(wc.wrId()), "wr_id " + wc.wrId() + " completed twice");
            }
            assertEquals(n, ids.size());
            assertEquals(0, pair.server.drainExtra(100), "no completion beyond the posted ones");
        }
    }

    @Test
    void registeringWithRemoteWriteButNoLocalWriteIsRefusedWithErrno() {
        try (RcPair pair = RcPair.connect()) {
            // verbs requires LOCAL_WRITE with REMOTE_WRITE / REMOTE_ATOMIC: ibv_reg_mr says EINVAL.
            NativeRdmaException e = assertThrows(NativeRdmaException.class,
                    () -> pair.server.register(4096, ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ));
            assertEquals("ibv_reg_mr", e.function());
            assertEquals(Errno.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("EINVAL"), e.getMessage());
        }
    }

    @Test
    void connectingToAPortNobodyListensOnIsRejectedOrUnreachable() {
        try (RcEndpoint client = new RcEndpoint(); Arena a = Arena.ofConfined()) {
            client.id = LibRdmacm.createId(client.channel, RdmaCmId.PS_TCP, a);
            InetSocketAddress nobody = VerbsTestBed.nextServerAddress();
            LibRdmacm.resolveAddr(client.id, SockAddr.of(new InetSocketAddress(VerbsTestBed.clientIp(), 0), a),
                    SockAddr.of(nobody, a), RcPair.CM_TIMEOUT_MS);
            client.expect(RdmaCmEvent.ADDR_RESOLVED, RcPair.CM_TIMEOUT_MS);
            LibRdmacm.resolveRoute(client.id, RcPair.CM_TIMEOUT_MS);
            client.expect(RdmaCmEvent.ROUTE_RESOLVED, RcPair.CM_TIMEOUT_MS);
            client.createQp();
            LibRdmacm.connect(client.id, client.connParam(null));
            RcEndpoint.CmEvent e = client.awaitCmEvent(60_000);
            assertTrue(e.type() == RdmaCmEvent.REJECTED || e.type() == RdmaCmEvent.UNREACHABLE
                            || e.type() == RdmaCmEvent.CONNECT_ERROR,
                    "expected REJECTED/UNREACHABLE/CONNECT_ERROR, got " + RdmaCmEvent.name(e.type()));
        }
    }

    @Test
    void badDestroyIsANativeExceptionNamingTheCall() {
        // Destroying a CQ that a QP still uses is EBUSY: the exception names the call and errno.
        try (RcPair pair = RcPair.connect()) {
            NativeRdmaException e = assertThrows(NativeRdmaException.class, () -> LibIbverbs.destroyCq(pair.client.cq));
            assertEquals("ibv_destroy_cq", e.function());
            assertEquals(Errno.EBUSY, e.errno(), e.getMessage());
        }
    }
}
