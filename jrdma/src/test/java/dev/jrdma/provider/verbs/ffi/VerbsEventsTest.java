package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_LOCAL_WRITE;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.Errno;
import dev.jrdma.os.LibC;
import dev.jrdma.exceptions.NativeRdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Completion channels (event mode), shared receive queues and asynchronous device events on real verbs. */
@Tag("verbs")
class VerbsEventsTest {
    private static final int TIMEOUT_MS = 20_000;

    @Test
    void completionChannelWakesForAnArmedCq() {
        try (RcPair pair = RcPair.connect(true, false)) {
            MemorySegment target = pair.server.register(4096, ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
            MemorySegment src = pair.client.register(4096, ACCESS_LOCAL_WRITE);
            assertEquals(0, pair.client.reqNotify(), "ibv_req_notify_cq");
            assertFalse(LibC.pollIn(IbvCompChannel.fd(pair.client.compChannel), 0,
                    pair.client.arena.allocate(LibC.POLLFD)), "no event before any completion");
            assertEquals(0, pair.client.postSend(7, IbvSendWr.WR_RDMA_WRITE, src, 0, 512, IbvMr.addr(target),
                    IbvMr.rkey(target), 0, 0, 0));
            MemorySegment eventCq = pair.client.awaitCqEvent(TIMEOUT_MS);
            assertEquals(pair.client.cq.address(), eventCq.address(), "the event names our CQ");
            RcEndpoint.Wc wc = pair.client.pollOne(TIMEOUT_MS);
            assertEquals("IBV_WC_SUCCESS", wc.statusName());
            assertEquals(7, wc.wrId());
        }
    }

    @Test
    void sendsArriveThroughASharedReceiveQueue() {
        try (RcPair pair = RcPair.connect(false, true)) {
            MemorySegment recvA = pair.server.register(256, ACCESS_LOCAL_WRITE);
            MemorySegment recvB = pair.server.register(256, ACCESS_LOCAL_WRITE);
            assertEquals(0, pair.server.postSrqRecv(81, recvA));
            assertEquals(0, pair.server.postSrqRecv(82, recvB));
            MemorySegment src = pair.client.register(256, ACCESS_LOCAL_WRITE);
            byte[] first = "first message".getBytes();
            byte[] second = "second".getBytes();
            RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(first));
            assertEquals(0, pair.client.postSend(1, IbvSendWr.WR_SEND, src, 0, first.length, 0, 0, 0, 0, 0));
            assertEquals("IBV_WC_SUCCESS", pair.client.pollOne(TIMEOUT_MS).statusName());
            RcEndpoint.bytes(src).copyFrom(MemorySegment.ofArray(second));
            assertEquals(0, pair.client.postSend(2, IbvSendWr.WR_SEND, src, 0, second.length, 0, 0, 0, 0, 0));
            assertEquals("IBV_WC_SUCCESS", pair.client.pollOne(TIMEOUT_MS).statusName());

            var got = pair.server.poll(2, TIMEOUT_MS);
            assertEquals(81, got.get(0).wrId(), "SRQ receives are consumed in order");
            assertEquals(first.length, got.get(0).byteLen());
            assertEquals(82, got.get(1).wrId());
            assertArrayEquals(first, RcEndpoint.bytes(recvA).asSlice(0, first.length).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(second, RcEndpoint.bytes(recvB).asSlice(0, second.length).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void asyncEventReportsAnSrqRunningBelowItsArmedLimit() {
        try (RcPair pair = RcPair.connect(false, true); Arena a = Arena.ofConfined()) {
            MemorySegment context = pair.server.context;
            int fd = IbvContext.asyncFd(context);
            LibC.setNonBlocking(fd);
            MemorySegment pollfd = a.allocate(LibC.POLLFD);
            MemorySegment recv = pair.server.register(64, ACCESS_LOCAL_WRITE);
            for (int i = 0; i < 4; i++) {
                assertEquals(0, pair.server.postSrqRecv(90 + i, recv));
            }
            // Arm the limit at 3: four receives are posted, so nothing fires until one is used...
            MemorySegment srqAttr = a.allocate(IbvSrqInitAttr.ATTR);
            IbvSrqInitAttr.setLimit(srqAttr, 3);
            LibIbverbs.modifySrq(pair.server.srq, srqAttr, IbvSrqInitAttr.LIMIT);
            assertFalse(LibC.pollIn(fd, 0, pollfd), "no async event before the SRQ runs low");
            IbvSrqInitAttr.setLimit(srqAttr, 1 << 20);
            NativeRdmaException tooHigh = assertThrows(NativeRdmaException.class,
                    () -> LibIbverbs.modifySrq(pair.server.srq, srqAttr, IbvSrqInitAttr.LIMIT), "a limit above max_wr");
            assertEquals("ibv_modify_srq", tooHigh.function());
            assertEquals(Errno.EINVAL, tooHigh.errno(), tooHigh.getMessage());
            // ...and two sends take it to 2 left, below the limit (IB spec 10.2.9.5).
            MemorySegment src = pair.client.register(64, ACCESS_LOCAL_WRITE);
            for (int i = 0; i < 2; i++) {
                assertEquals(0, pair.client.postSend(i, IbvSendWr.WR_SEND, src, 0, 8, 0, 0, 0, 0, 0));
                assertEquals("IBV_WC_SUCCESS", pair.client.pollOne(TIMEOUT_MS).statusName());
            }
            assertEquals(2, pair.server.poll(2, TIMEOUT_MS).size());

            assertTrue(LibC.pollIn(fd, TIMEOUT_MS, pollfd), "an async event within " + TIMEOUT_MS + " ms");
            MemorySegment event = a.allocate(IbvAsyncEvent.LAYOUT);
            LibIbverbs.getAsyncEvent(context, event);
            int type = IbvAsyncEvent.eventType(event);
            MemorySegment element = IbvAsyncEvent.element(event);
            LibIbverbs.ackAsyncEvent(event);
            assertEquals("SRQ limit reached", LibIbverbs.eventTypeStr(type));
            assertEquals(IbvAsyncEvent.SRQ_LIMIT_REACHED, type);
            assertEquals(pair.server.srq.address(), element.address(), "the event names the SRQ");
            assertFalse(LibC.pollIn(fd, 100, pollfd), "the limit disarms after firing once");
        }
    }
}
