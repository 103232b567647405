package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_LOCAL_WRITE;
import static dev.jrdma.provider.verbs.ffi.IbvMr.ACCESS_REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    void asyncEventReportsTheLastWqeOfAnSrqQpMovedToError() {
        try (RcPair pair = RcPair.connect(false, true); Arena a = Arena.ofConfined()) {
            MemorySegment context = pair.server.context;
            int fd = IbvContext.asyncFd(context);
            LibC.setNonBlocking(fd);
            MemorySegment pollfd = a.allocate(LibC.POLLFD);
            // An SRQ-attached QP entering ERR reports IBV_EVENT_QP_LAST_WQE_REACHED (IB spec 11.6.2).
            pair.server.moveToError();
            MemorySegment event = a.allocate(IbvAsyncEvent.LAYOUT);
            long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
            int type = -1;
            while (type != IbvAsyncEvent.QP_LAST_WQE_REACHED) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                assertTrue(left > 0, "no IBV_EVENT_QP_LAST_WQE_REACHED within " + TIMEOUT_MS + " ms");
                if (!LibC.pollIn(fd, (int) left, pollfd)) {
                    continue;
                }
                LibIbverbs.getAsyncEvent(context, event);
                type = IbvAsyncEvent.eventType(event);
                MemorySegment element = IbvAsyncEvent.element(event);
                LibIbverbs.ackAsyncEvent(event);
                if (type == IbvAsyncEvent.QP_LAST_WQE_REACHED) {
                    assertEquals(pair.server.qp.address(), element.address(), "the event names the QP");
                }
            }
            assertEquals("last WQE reached", LibIbverbs.eventTypeStr(type));
        }
    }
}
