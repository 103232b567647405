package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.AddressSpace;
import dev.jrdma.os.Errno;
import dev.jrdma.os.CLayouts;
import dev.jrdma.exceptions.NativeRdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * The verbs jrdma reaches through function pointers (what verbs.h makes static inline), with
 * fake provider ops: success and each failure path, without a device.
 */
class FunctionPointerPathsTest {
    private static final FunctionDescriptor QUERY_DEVICE_EX = FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
    private static final FunctionDescriptor QUERY_PORT = FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_BYTE, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);

    static final AtomicLong LAST_SIZE = new AtomicLong();

    /** A query_device_ex that fills max_qp_rd_atom = 77 and remembers the size it was given. */
    static int fakeQueryDeviceEx(MemorySegment ctx, MemorySegment input, MemorySegment attr, long size) {
        LAST_SIZE.set(size);
        MemorySegment a = attr.reinterpret(size);
        a.set(ValueLayout.JAVA_INT, CLayouts.offset(IbvDeviceAttrEx.LAYOUT, "orig_attr.max_qp_rd_atom"), 77);
        a.set(ValueLayout.JAVA_LONG, CLayouts.offset(IbvDeviceAttrEx.LAYOUT, "odp_caps.general_caps"), 1L);
        return 0;
    }

    static int fakeQueryPort(MemorySegment ctx, byte port, MemorySegment attr, long size) {
        LAST_SIZE.set(size);
        attr.reinterpret(size).set(ValueLayout.JAVA_INT, CLayouts.offset(IbvPortAttr.LAYOUT, "state"),
                LibIbverbs.PORT_ACTIVE);
        return port == 1 ? 0 : Errno.EINVAL;
    }

    @Test
    void verbsContextOpIsFoundOnlyWhenTheProviderHasIt() {
        try (FakeVerbsContext fake = new FakeVerbsContext()) {
            assertEquals(MemorySegment.NULL, VerbsContext.op(fake.context, "query_device_ex"), "unset op");
            MemorySegment stub = fake.stub(FakeVerbsContext.returning(0, MemorySegment.class),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            fake.verbsContext.set(ValueLayout.ADDRESS, CLayouts.offset(VerbsContext.LAYOUT, "query_device_ex"), stub);
            assertEquals(stub.address(), VerbsContext.op(fake.context, "query_device_ex").address());

            // A provider from an older rdma-core: its verbs_context starts after query_device_ex.
            long opOffset = CLayouts.offset(VerbsContext.LAYOUT, "query_device_ex");
            fake.sz(VerbsContext.LAYOUT.byteSize() - opOffset - 8);
            assertEquals(MemorySegment.NULL, VerbsContext.op(fake.context, "query_device_ex"), "op older than provider");
            fake.sz(VerbsContext.LAYOUT.byteSize() - opOffset);
            assertEquals(stub.address(), VerbsContext.op(fake.context, "query_device_ex").address(), "exactly covered");

            fake.notExtended();
            assertEquals(MemorySegment.NULL, VerbsContext.op(fake.context, "query_device_ex"), "legacy context");
        }
    }

    @Test
    void queryDeviceExGoesThroughVerbsContextWithTheStructSize() throws Exception {
        try (FakeVerbsContext fake = new FakeVerbsContext(); Arena a = Arena.ofConfined()) {
            fake.op("query_device_ex", MethodHandles.lookup().findStatic(FunctionPointerPathsTest.class,
                    "fakeQueryDeviceEx", MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class,
                            MemorySegment.class, long.class)), QUERY_DEVICE_EX);
            MemorySegment attr = a.allocate(IbvDeviceAttrEx.LAYOUT);
            LibIbverbs.queryDeviceEx(fake.context, attr);
            assertEquals(IbvDeviceAttrEx.LAYOUT.byteSize(), LAST_SIZE.get(), "attr_size is sizeof(ibv_device_attr_ex)");
            assertEquals(77, IbvDeviceAttr.intField(IbvDeviceAttrEx.origAttr(attr), "max_qp_rd_atom"));
            assertEquals(1L, IbvDeviceAttrEx.odpGeneralCaps(attr));
        }
    }

    @Test
    void queryDeviceExFailureNamesTheCallAndErrno() {
        try (FakeVerbsContext fake = new FakeVerbsContext(); Arena a = Arena.ofConfined()) {
            MethodHandle einval = FakeVerbsContext.returning(Errno.EINVAL, MemorySegment.class, MemorySegment.class,
                    MemorySegment.class, long.class);
            fake.op("query_device_ex", einval, QUERY_DEVICE_EX);
            NativeRdmaException e = assertThrows(NativeRdmaException.class,
                    () -> LibIbverbs.queryDeviceEx(fake.context, a.allocate(IbvDeviceAttrEx.LAYOUT)));
            assertEquals("ibv_query_device_ex", e.function());
            assertEquals(Errno.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("EINVAL (22)") && e.getMessage().contains("Invalid argument"),
                    e.getMessage());
        }
    }

    @Test
    void queryPortGoesThroughVerbsContextAndReportsTheBadPort() throws Exception {
        try (FakeVerbsContext fake = new FakeVerbsContext(); Arena a = Arena.ofConfined()) {
            fake.op("query_port", MethodHandles.lookup().findStatic(FunctionPointerPathsTest.class, "fakeQueryPort",
                    MethodType.methodType(int.class, MemorySegment.class, byte.class, MemorySegment.class, long.class)),
                    QUERY_PORT);
            MemorySegment attr = a.allocate(IbvPortAttr.LAYOUT);
            LibIbverbs.queryPort(fake.context, 1, attr);
            assertEquals(IbvPortAttr.LAYOUT.byteSize(), LAST_SIZE.get());
            assertEquals(LibIbverbs.PORT_ACTIVE, IbvPortAttr.state(attr));
            NativeRdmaException e = assertThrows(NativeRdmaException.class, () -> LibIbverbs.queryPort(fake.context, 2, attr));
            assertEquals("ibv_query_port", e.function());
            assertTrue(e.getMessage().contains("port 2"), e.getMessage());
        }
    }

    @Test
    void hotPathVerbsReturnTheProviderCodeWithoutThrowing() {
        try (FakeVerbsContext fake = new FakeVerbsContext()) {
            fake.contextOp("post_send", FakeVerbsContext.returning(Errno.ENOMEM, FakeVerbsContext.intType(3)
                    .parameterArray()), FakeVerbsContext.intFn(3));
            fake.contextOp("post_recv", FakeVerbsContext.returning(Errno.EINVAL, FakeVerbsContext.intType(3)
                    .parameterArray()), FakeVerbsContext.intFn(3));
            fake.contextOp("poll_cq", FakeVerbsContext.returning(-1, MemorySegment.class, int.class, MemorySegment.class),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            fake.contextOp("req_notify_cq", FakeVerbsContext.returning(Errno.EIO, MemorySegment.class, int.class),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MemorySegment ctx = fake.context;
            MemorySegment any = fake.arena.allocate(64);
            assertEquals(Errno.ENOMEM, LibIbverbs.postSend(IbvContext.postSendFn(ctx), any, any, any), "send queue full");
            assertEquals(Errno.EINVAL, LibIbverbs.postRecv(IbvContext.postRecvFn(ctx), any, any, any));
            assertEquals(-1, LibIbverbs.pollCq(IbvContext.pollCqFn(ctx), any, 4, any), "poll failure is negative");
            assertEquals(Errno.EIO, LibIbverbs.reqNotifyCq(IbvContext.reqNotifyCqFn(ctx), any, false));
            // The data path's forms by address reach the same function pointers and return their codes as they are.
            long at = any.address();
            assertEquals(Errno.ENOMEM, DataPathVerbs.postSend(IbvContext.postSendFn(ctx), at, at, at), "send queue full");
            assertEquals(Errno.EINVAL, DataPathVerbs.postRecv(IbvContext.postRecvFn(ctx), at, at, at));
            assertEquals(-1, DataPathVerbs.pollCq(IbvContext.pollCqFn(ctx), at, 4, at), "poll failure is negative");
        }
    }

    /** What the fake poll_cq below was handed: the CQ, the count and the array, as addresses. */
    private static final long[] POLLED = new long[3];

    static int fakePollCq(MemorySegment cq, int max, MemorySegment wcs) {
        POLLED[0] = cq.address();
        POLLED[1] = max;
        POLLED[2] = wcs.address();
        AddressSpace.putLong(wcs.address(), 0x1234_5678_9abcL);   // the first completion's wr_id
        return 1;
    }

    @Test
    void theDataPathsPollHandsItsAddressesOverAsTheyAreAndReadsTheCompletionBack() throws Exception {
        try (FakeVerbsContext fake = new FakeVerbsContext()) {
            fake.contextOp("poll_cq", MethodHandles.lookup().findStatic(FunctionPointerPathsTest.class, "fakePollCq",
                    MethodType.methodType(int.class, MemorySegment.class, int.class, MemorySegment.class)),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            MemorySegment cq = fake.arena.allocate(64);
            MemorySegment wcs = fake.arena.allocate(IbvWc.LAYOUT, 4);
            assertEquals(1, DataPathVerbs.pollCq(IbvContext.pollCqFn(fake.context), cq.address(), 4, wcs.address()));
            assertEquals(cq.address(), POLLED[0]);
            assertEquals(4, POLLED[1]);
            assertEquals(wcs.address(), POLLED[2]);
            assertEquals(0x1234_5678_9abcL, IbvWc.wrIdAt(wcs.address()));
            assertEquals(0x1234_5678_9abcL, IbvWc.wrId(wcs, 0), "the segment reader agrees");
        }
    }
}
