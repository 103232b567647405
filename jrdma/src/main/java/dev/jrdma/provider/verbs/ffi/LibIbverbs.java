package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;
import static java.lang.foreign.FunctionDescriptor.of;
import static java.lang.foreign.FunctionDescriptor.ofVoid;

import dev.jrdma.os.Errno;
import dev.jrdma.os.NativeCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * libibverbs.so.1 through FFM: one {@code static final} handle per function, invoked with
 * {@code invokeExact}, and a Java method per verb that turns failure into a
 * {@link dev.jrdma.exceptions.NativeRdmaException} naming the call, errno and strerror.
 *
 * <p>The verbs verbs.h makes {@code static inline} are done here the way the header does them:
 * {@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_post_srq_recv}, {@code ibv_poll_cq}
 * and {@code ibv_req_notify_cq} call through {@code ibv_context.ops};
 * {@code ibv_query_device_ex} and {@code ibv_query_port} through {@code verbs_context};
 * {@code ibv_query_gid_ex} and {@code ibv_query_gid_table} call the exported {@code _ibv_*}
 * functions with the struct size. The hot five return the provider's code and never throw.
 */
public final class LibIbverbs {
    private static final NativeLibraries.Loaded LIB = NativeLibraries.ibverbs();

    private static final MethodHandle GET_DEVICE_LIST = Downcalls.withErrno(LIB, "ibv_get_device_list", of(PTR, PTR));
    private static final MethodHandle FREE_DEVICE_LIST = Downcalls.plain(LIB, "ibv_free_device_list", ofVoid(PTR));
    private static final MethodHandle GET_DEVICE_NAME = Downcalls.plain(LIB, "ibv_get_device_name", of(PTR, PTR));
    private static final MethodHandle GET_DEVICE_GUID = Downcalls.plain(LIB, "ibv_get_device_guid", of(U64, PTR));
    private static final MethodHandle OPEN_DEVICE = Downcalls.withErrno(LIB, "ibv_open_device", of(PTR, PTR));
    private static final MethodHandle CLOSE_DEVICE = Downcalls.withErrno(LIB, "ibv_close_device", of(INT, PTR));
    private static final MethodHandle QUERY_DEVICE = Downcalls.withErrno(LIB, "ibv_query_device", of(INT, PTR, PTR));
    private static final MethodHandle QUERY_PORT = Downcalls.withErrno(LIB, "ibv_query_port", of(INT, PTR, U8, PTR));
    private static final MethodHandle QUERY_GID = Downcalls.withErrno(LIB, "ibv_query_gid", of(INT, PTR, U8, INT, PTR));
    private static final MethodHandle QUERY_GID_EX = Downcalls.withErrno(LIB, "_ibv_query_gid_ex",
            of(INT, PTR, U32, U32, PTR, U32, SIZE_T));
    private static final MethodHandle QUERY_GID_TABLE = Downcalls.withErrno(LIB, "_ibv_query_gid_table",
            of(SIZE_T, PTR, PTR, SIZE_T, U32, SIZE_T));
    private static final MethodHandle ALLOC_PD = Downcalls.withErrno(LIB, "ibv_alloc_pd", of(PTR, PTR));
    private static final MethodHandle DEALLOC_PD = Downcalls.withErrno(LIB, "ibv_dealloc_pd", of(INT, PTR));
    private static final MethodHandle REG_MR_IOVA2 = Downcalls.withErrno(LIB, "ibv_reg_mr_iova2",
            of(PTR, PTR, PTR, SIZE_T, U64, U32));
    private static final MethodHandle DEREG_MR = Downcalls.withErrno(LIB, "ibv_dereg_mr", of(INT, PTR));
    private static final MethodHandle CREATE_COMP_CHANNEL = Downcalls.withErrno(LIB, "ibv_create_comp_channel", of(PTR, PTR));
    private static final MethodHandle DESTROY_COMP_CHANNEL = Downcalls.withErrno(LIB, "ibv_destroy_comp_channel", of(INT, PTR));
    private static final MethodHandle CREATE_CQ = Downcalls.withErrno(LIB, "ibv_create_cq", of(PTR, PTR, INT, PTR, PTR, INT));
    private static final MethodHandle DESTROY_CQ = Downcalls.withErrno(LIB, "ibv_destroy_cq", of(INT, PTR));
    private static final MethodHandle GET_CQ_EVENT = Downcalls.withErrno(LIB, "ibv_get_cq_event", of(INT, PTR, PTR, PTR));
    private static final MethodHandle ACK_CQ_EVENTS = Downcalls.plain(LIB, "ibv_ack_cq_events", ofVoid(PTR, U32));
    private static final MethodHandle CREATE_QP = Downcalls.withErrno(LIB, "ibv_create_qp", of(PTR, PTR, PTR));
    private static final MethodHandle MODIFY_QP = Downcalls.withErrno(LIB, "ibv_modify_qp", of(INT, PTR, PTR, INT));
    private static final MethodHandle QUERY_QP = Downcalls.withErrno(LIB, "ibv_query_qp", of(INT, PTR, PTR, INT, PTR));
    private static final MethodHandle DESTROY_QP = Downcalls.withErrno(LIB, "ibv_destroy_qp", of(INT, PTR));
    private static final MethodHandle CREATE_SRQ = Downcalls.withErrno(LIB, "ibv_create_srq", of(PTR, PTR, PTR));
    private static final MethodHandle MODIFY_SRQ = Downcalls.withErrno(LIB, "ibv_modify_srq", of(INT, PTR, PTR, INT));
    private static final MethodHandle DESTROY_SRQ = Downcalls.withErrno(LIB, "ibv_destroy_srq", of(INT, PTR));
    private static final MethodHandle CREATE_AH = Downcalls.withErrno(LIB, "ibv_create_ah", of(PTR, PTR, PTR));
    private static final MethodHandle CREATE_AH_FROM_WC = Downcalls.withErrno(LIB, "ibv_create_ah_from_wc",
            of(PTR, PTR, PTR, PTR, U8));
    private static final MethodHandle DESTROY_AH = Downcalls.withErrno(LIB, "ibv_destroy_ah", of(INT, PTR));
    private static final MethodHandle GET_ASYNC_EVENT = Downcalls.withErrno(LIB, "ibv_get_async_event", of(INT, PTR, PTR));
    private static final MethodHandle ACK_ASYNC_EVENT = Downcalls.plain(LIB, "ibv_ack_async_event", ofVoid(PTR));
    private static final MethodHandle EVENT_TYPE_STR = Downcalls.plain(LIB, "ibv_event_type_str", of(PTR, INT));

    // Through function pointers (static inline in verbs.h).
    private static final MethodHandle POLL_CQ = Downcalls.pointer(of(INT, PTR, INT, PTR), true);
    private static final MethodHandle REQ_NOTIFY_CQ = Downcalls.pointer(of(INT, PTR, INT), true);
    private static final MethodHandle POST_SEND = Downcalls.pointer(of(INT, PTR, PTR, PTR), true);
    private static final MethodHandle POST_RECV = Downcalls.pointer(of(INT, PTR, PTR, PTR), true);
    private static final MethodHandle QUERY_DEVICE_EX_OP = Downcalls.pointerWithErrno(of(INT, PTR, PTR, PTR, SIZE_T));
    private static final MethodHandle ALLOC_MW_OP = Downcalls.pointerWithErrno(of(PTR, PTR, INT));
    private static final MethodHandle DEALLOC_MW_OP = Downcalls.pointerWithErrno(of(INT, PTR));
    private static final MethodHandle QUERY_PORT_OP = Downcalls.pointerWithErrno(of(INT, PTR, U8, PTR, SIZE_T));

    /** {@code enum ibv_atomic_cap}. */
    public static final int ATOMIC_NONE = 0, ATOMIC_HCA = 1, ATOMIC_GLOB = 2;
    /** {@code enum ibv_port_state}. */
    public static final int PORT_NOP = 0, PORT_DOWN = 1, PORT_INIT = 2, PORT_ARMED = 3, PORT_ACTIVE = 4,
            PORT_ACTIVE_DEFER = 5;
    /** IBV_DEVICE_SRQ_RESIZE etc. are in device_cap_flags; SRQ support is max_srq &gt; 0. */
    public static final int DEVICE_MEM_WINDOW = 1 << 17, DEVICE_MEM_MGT_EXTENSIONS = 1 << 21;

    private LibIbverbs() {
    }

    private static MemorySegment checkPtr(MemorySegment p, String function, String context) {
        if (p.equals(MemorySegment.NULL)) {
            int errno = Errno.last();
            // libibverbs leaves errno 0 on a few paths (e.g. no provider matched): say so.
            throw Errno.failure(function, errno == 0 ? Errno.ENODEV : errno, context);
        }
        return p;
    }

    // ---- devices

    /**
     * {@code ibv_get_device_list}: the NULL-terminated device array (free it with
     * {@link #freeDeviceList}) and its length in {@code count[0]}. An empty list is not an
     * error; a failure to read sysfs or load providers is.
     */
    public static MemorySegment getDeviceList(Arena arena, int[] count) {
        MemorySegment num = arena.allocate(INT);
        try {
            MemorySegment list = (MemorySegment) GET_DEVICE_LIST.invokeExact(Errno.capture(), num);
            if (list.equals(MemorySegment.NULL)) {
                int errno = Errno.last();
                throw Errno.failure("ibv_get_device_list", errno, errno == Errno.ENOSYS
                        ? "this kernel has no RDMA: ib_uverbs is not loaded or not built in"
                        : "is /sys/class/infiniband_verbs readable?");
            }
            count[0] = num.get(INT, 0);
            return list.reinterpret((count[0] + 1L) * PTR.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void freeDeviceList(MemorySegment list) {
        try {
            FREE_DEVICE_LIST.invokeExact(list);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static String getDeviceName(MemorySegment device) {
        try {
            MemorySegment name = (MemorySegment) GET_DEVICE_NAME.invokeExact(device);
            return name.equals(MemorySegment.NULL) ? "" : name.reinterpret(64).getString(0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The node GUID in host order (ibv_devinfo prints it in this order). */
    public static long getDeviceGuid(MemorySegment device) {
        try {
            return Long.reverseBytes((long) GET_DEVICE_GUID.invokeExact(device));   // returns __be64
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static MemorySegment openDevice(MemorySegment device) {
        try {
            MemorySegment ctx = (MemorySegment) OPEN_DEVICE.invokeExact(Errno.capture(), device);
            return checkPtr(ctx, "ibv_open_device", getDeviceName(device));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void closeDevice(MemorySegment context) {
        try {
            Errno.check((int) CLOSE_DEVICE.invokeExact(Errno.capture(), context), "ibv_close_device", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void queryDevice(MemorySegment context, MemorySegment attr) {
        try {
            Errno.check((int) QUERY_DEVICE.invokeExact(Errno.capture(), context, attr), "ibv_query_device", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * verbs.h's inline {@code ibv_query_device_ex} with no input: through verbs_context when the
     * provider has it, else the legacy query into {@code orig_attr} (the rest left zero).
     */
    public static void queryDeviceEx(MemorySegment context, MemorySegment attrEx) {
        MemorySegment op = VerbsContext.op(context, "query_device_ex");
        if (!op.equals(MemorySegment.NULL)) {
            try {
                int rc = (int) QUERY_DEVICE_EX_OP.invokeExact(op, Errno.capture(), context, MemorySegment.NULL,
                        attrEx, IbvDeviceAttrEx.LAYOUT.byteSize());
                if (rc != Errno.EOPNOTSUPP && rc != Errno.ENOSYS) {
                    Errno.check(rc, "ibv_query_device_ex", null);
                    return;
                }
            } catch (Throwable t) {
                throw NativeCalls.rethrow(t);
            }
        }
        attrEx.fill((byte) 0);
        queryDevice(context, IbvDeviceAttrEx.origAttr(attrEx));
    }

    /** verbs.h's inline {@code ibv_query_port}: the full struct through verbs_context, else the compat one. */
    public static void queryPort(MemorySegment context, int portNum, MemorySegment portAttr) {
        MemorySegment op = VerbsContext.op(context, "query_port");
        try {
            int rc;
            if (op.equals(MemorySegment.NULL)) {
                portAttr.fill((byte) 0);
                rc = (int) QUERY_PORT.invokeExact(Errno.capture(), context, (byte) portNum, portAttr);
            } else {
                rc = (int) QUERY_PORT_OP.invokeExact(op, Errno.capture(), context, (byte) portNum, portAttr,
                        IbvPortAttr.LAYOUT.byteSize());
            }
            Errno.check(rc, "ibv_query_port", "port " + portNum);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_query_gid}: 16 raw bytes of GID {@code index} on {@code port}. */
    public static void queryGid(MemorySegment context, int portNum, int index, MemorySegment gid) {
        try {
            Errno.check((int) QUERY_GID.invokeExact(Errno.capture(), context, (byte) portNum, index, gid),
                    "ibv_query_gid", "port " + portNum + " index " + index);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_query_gid_ex}: one GID entry with its type and netdev. Returns false for an empty
     * slot (ENODATA), which GID tables have between valid entries.
     */
    public static boolean queryGidEx(MemorySegment context, int portNum, int index, MemorySegment entry) {
        try {
            int rc = (int) QUERY_GID_EX.invokeExact(Errno.capture(), context, portNum, index, entry, 0,
                    IbvGidEntry.LAYOUT.byteSize());
            if (rc == Errno.ENODATA || (rc < 0 && Errno.last() == Errno.ENODATA)) {
                return false;
            }
            Errno.check(rc, "ibv_query_gid_ex", "port " + portNum + " index " + index);
            return true;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_query_gid_table}: the valid GID entries of every port; returns how many were written. */
    public static int queryGidTable(MemorySegment context, MemorySegment entries, int maxEntries) {
        try {
            long n = (long) QUERY_GID_TABLE.invokeExact(Errno.capture(), context, entries, (long) maxEntries, 0,
                    IbvGidEntry.LAYOUT.byteSize());
            if (n < 0) {
                throw Errno.failure("ibv_query_gid_table", (int) -n, null);
            }
            return (int) n;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- protection domains and memory

    public static MemorySegment allocPd(MemorySegment context) {
        try {
            return checkPtr((MemorySegment) ALLOC_PD.invokeExact(Errno.capture(), context), "ibv_alloc_pd", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void deallocPd(MemorySegment pd) {
        try {
            Errno.check((int) DEALLOC_PD.invokeExact(Errno.capture(), pd), "ibv_dealloc_pd",
                    "is something still registered in it?");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_reg_mr} (as {@code ibv_reg_mr_iova2} with iova = address, which is what the macro does). */
    public static MemorySegment regMr(MemorySegment pd, MemorySegment memory, int access) {
        try {
            MemorySegment mr = (MemorySegment) REG_MR_IOVA2.invokeExact(Errno.capture(), pd, memory,
                    memory.byteSize(), memory.address(), access);
            return checkPtr(mr, "ibv_reg_mr", memory.byteSize() + " bytes at 0x"
                    + Long.toHexString(memory.address()) + ", access 0x" + Integer.toHexString(access));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * An implicit on-demand-paging MR: the whole address space ({@code ibv_reg_mr(pd, NULL,
     * SIZE_MAX, IBV_ACCESS_ON_DEMAND | access)}); pages are faulted in as the device touches them.
     */
    public static MemorySegment regMrImplicitOnDemand(MemorySegment pd, int access) {
        try {
            MemorySegment mr = (MemorySegment) REG_MR_IOVA2.invokeExact(Errno.capture(), pd, MemorySegment.NULL, -1L, 0L,
                    access | IbvMr.ACCESS_ON_DEMAND);
            return checkPtr(mr, "ibv_reg_mr", "implicit on-demand paging (NULL, SIZE_MAX), access 0x" + Integer.toHexString(access));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void deregMr(MemorySegment mr) {
        try {
            Errno.check((int) DEREG_MR.invokeExact(Errno.capture(), mr), "ibv_dereg_mr", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- completion channels and queues

    public static MemorySegment createCompChannel(MemorySegment context) {
        try {
            return checkPtr((MemorySegment) CREATE_COMP_CHANNEL.invokeExact(Errno.capture(), context),
                    "ibv_create_comp_channel", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyCompChannel(MemorySegment channel) {
        try {
            Errno.check((int) DESTROY_COMP_CHANNEL.invokeExact(Errno.capture(), channel), "ibv_destroy_comp_channel",
                    "are CQs still attached to it?");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_create_cq}; {@code channel} may be NULL (polling only). */
    public static MemorySegment createCq(MemorySegment context, int cqe, MemorySegment channel, int compVector) {
        try {
            MemorySegment cq = (MemorySegment) CREATE_CQ.invokeExact(Errno.capture(), context, cqe,
                    MemorySegment.NULL, channel, compVector);
            return checkPtr(cq, "ibv_create_cq", "cqe " + cqe);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyCq(MemorySegment cq) {
        try {
            Errno.check((int) DESTROY_CQ.invokeExact(Errno.capture(), cq), "ibv_destroy_cq",
                    "are QPs still using it, or CQ events unacknowledged?");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_get_cq_event}: blocks until the channel has an event (use poll on the channel's
     * fd first for a bounded wait). Returns the CQ the event is for; acknowledge it with
     * {@link #ackCqEvents}.
     */
    public static MemorySegment getCqEvent(MemorySegment channel, Arena arena) {
        MemorySegment cqOut = arena.allocate(PTR);
        MemorySegment ctxOut = arena.allocate(PTR);
        try {
            Errno.check((int) GET_CQ_EVENT.invokeExact(Errno.capture(), channel, cqOut, ctxOut), "ibv_get_cq_event", null);
            return cqOut.get(PTR, 0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_get_cq_event} on a channel whose fd is non-blocking: the CQ of the next event,
     * or null when there is none (EAGAIN). {@code cqOut}/{@code ctxOut}: pointer-sized scratch.
     */
    public static MemorySegment tryGetCqEvent(MemorySegment channel, MemorySegment cqOut, MemorySegment ctxOut) {
        try {
            int rc = (int) GET_CQ_EVENT.invokeExact(Errno.capture(), channel, cqOut, ctxOut);
            if (rc == 0) {
                return cqOut.get(PTR, 0);
            }
            int errno = Errno.last();
            if (errno == Errno.EAGAIN) {
                return null;
            }
            throw Errno.failure("ibv_get_cq_event", errno, null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void ackCqEvents(MemorySegment cq, int count) {
        try {
            ACK_CQ_EVENTS.invokeExact(cq, count);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_poll_cq} through {@code ops.poll_cq}: up to {@code max} completions into
     * {@code wcs}. Returns how many, or a negative value on failure. Hot path: no allocation.
     */
    public static int pollCq(MemorySegment pollCqFn, MemorySegment cq, int max, MemorySegment wcs) {
        try {
            return (int) POLL_CQ.invokeExact(pollCqFn, cq, max, wcs);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_req_notify_cq} through {@code ops.req_notify_cq}; returns 0 or an errno. */
    public static int reqNotifyCq(MemorySegment reqNotifyFn, MemorySegment cq, boolean solicitedOnly) {
        try {
            return (int) REQ_NOTIFY_CQ.invokeExact(reqNotifyFn, cq, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- queue pairs

    public static MemorySegment createQp(MemorySegment pd, MemorySegment initAttr) {
        try {
            return checkPtr((MemorySegment) CREATE_QP.invokeExact(Errno.capture(), pd, initAttr), "ibv_create_qp", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void modifyQp(MemorySegment qp, MemorySegment attr, int mask) {
        try {
            Errno.check((int) MODIFY_QP.invokeExact(Errno.capture(), qp, attr, mask), "ibv_modify_qp",
                    "qp " + IbvQp.qpNum(qp) + " mask 0x" + Integer.toHexString(mask));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void queryQp(MemorySegment qp, MemorySegment attr, int mask, MemorySegment initAttr) {
        try {
            Errno.check((int) QUERY_QP.invokeExact(Errno.capture(), qp, attr, mask, initAttr), "ibv_query_qp",
                    "qp " + IbvQp.qpNum(qp));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyQp(MemorySegment qp) {
        try {
            Errno.check((int) DESTROY_QP.invokeExact(Errno.capture(), qp), "ibv_destroy_qp", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_post_send} through {@code ops.post_send}. Returns 0 or the provider's errno
     * (ENOMEM: send queue full; EINVAL: bad request or QP state); {@code badWr} receives the
     * first request not posted. Hot path: no allocation, no exception.
     */
    public static int postSend(MemorySegment postSendFn, MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return (int) POST_SEND.invokeExact(postSendFn, qp, wr, badWr);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_post_recv} through {@code ops.post_recv}; same contract as {@link #postSend}. */
    public static int postRecv(MemorySegment postRecvFn, MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return (int) POST_RECV.invokeExact(postRecvFn, qp, wr, badWr);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_post_srq_recv} through {@code ops.post_srq_recv}. */
    public static int postSrqRecv(MemorySegment postSrqRecvFn, MemorySegment srq, MemorySegment wr,
                                  MemorySegment badWr) {
        return postRecv(postSrqRecvFn, srq, wr, badWr);
    }

    // ---- shared receive queues

    public static MemorySegment createSrq(MemorySegment pd, MemorySegment initAttr) {
        try {
            return checkPtr((MemorySegment) CREATE_SRQ.invokeExact(Errno.capture(), pd, initAttr), "ibv_create_srq", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_modify_srq}: resize ({@link IbvSrqInitAttr#MAX_WR}) or arm the limit event
     * ({@link IbvSrqInitAttr#LIMIT}: once fewer than {@code srq_limit} receives are left, the
     * device reports {@code IBV_EVENT_SRQ_LIMIT_REACHED} and disarms). {@code attr} is a
     * {@code struct ibv_srq_attr} ({@link IbvSrqInitAttr#ATTR}).
     */
    public static void modifySrq(MemorySegment srq, MemorySegment attr, int mask) {
        try {
            Errno.check((int) MODIFY_SRQ.invokeExact(Errno.capture(), srq, attr, mask), "ibv_modify_srq",
                    "mask 0x" + Integer.toHexString(mask));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroySrq(MemorySegment srq) {
        try {
            Errno.check((int) DESTROY_SRQ.invokeExact(Errno.capture(), srq), "ibv_destroy_srq", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- memory windows

    /** {@code enum ibv_mw_type}. */
    public static final int MW_TYPE_1 = 1, MW_TYPE_2 = 2;

    /**
     * {@code ibv_alloc_mw(pd, type)} through {@code ops.alloc_mw} ({@code allocMwFn}, of the PD's
     * context): a memory window, type 2 unbound ("free") until a bind work request binds it on a
     * queue pair. Throws naming the errno (EOPNOTSUPP where the device has no windows).
     */
    public static MemorySegment allocMw(MemorySegment allocMwFn, MemorySegment pd, int type) {
        try {
            return checkPtr((MemorySegment) ALLOC_MW_OP.invokeExact(allocMwFn, Errno.capture(), pd, type), "ibv_alloc_mw",
                    "type " + type).reinterpret(IbvMw.LAYOUT.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code ibv_dealloc_mw(mw)} through {@code ops.dealloc_mw}: a bound window is invalidated with it. */
    public static void deallocMw(MemorySegment deallocMwFn, MemorySegment mw) {
        try {
            int rc = (int) DEALLOC_MW_OP.invokeExact(deallocMwFn, Errno.capture(), mw);
            if (rc != 0) {
                throw Errno.failure("ibv_dealloc_mw", rc > 0 ? rc : Errno.last(), null);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- address handles (UD)

    /** {@code ibv_create_ah}: an address handle for UD sends to the destination {@code ahAttr} (a {@code struct ibv_ah_attr}) names. */
    public static MemorySegment createAh(MemorySegment pd, MemorySegment ahAttr) {
        try {
            return checkPtr((MemorySegment) CREATE_AH.invokeExact(Errno.capture(), pd, ahAttr), "ibv_create_ah", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_create_ah_from_wc}: an address handle back to the sender of a UD receive, from its
     * work completion ({@code wc}, one {@code struct ibv_wc}) and the 40-byte GRH at the start of
     * its buffer.
     */
    public static MemorySegment createAhFromWc(MemorySegment pd, MemorySegment wc, MemorySegment grh, int port) {
        try {
            return checkPtr((MemorySegment) CREATE_AH_FROM_WC.invokeExact(Errno.capture(), pd, wc, grh, (byte) port),
                    "ibv_create_ah_from_wc", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyAh(MemorySegment ah) {
        try {
            Errno.check((int) DESTROY_AH.invokeExact(Errno.capture(), ah), "ibv_destroy_ah", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    // ---- asynchronous events

    /**
     * {@code ibv_get_async_event}: blocks until the device reports an event (poll the context's
     * {@code async_fd} first for a bounded wait). Acknowledge it with {@link #ackAsyncEvent}.
     */
    public static void getAsyncEvent(MemorySegment context, MemorySegment event) {
        try {
            Errno.check((int) GET_ASYNC_EVENT.invokeExact(Errno.capture(), context, event), "ibv_get_async_event", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code ibv_get_async_event} on a context whose {@code async_fd} is non-blocking: true with
     * an event in {@code event} (acknowledge it), false when there is none now (EAGAIN).
     */
    public static boolean tryGetAsyncEvent(MemorySegment context, MemorySegment event) {
        try {
            int rc = (int) GET_ASYNC_EVENT.invokeExact(Errno.capture(), context, event);
            if (rc == 0) {
                return true;
            }
            int errno = Errno.last();
            if (errno == Errno.EAGAIN) {
                return false;
            }
            throw Errno.failure("ibv_get_async_event", errno, null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void ackAsyncEvent(MemorySegment event) {
        try {
            ACK_ASYNC_EVENT.invokeExact(event);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static String eventTypeStr(int eventType) {
        try {
            MemorySegment s = (MemorySegment) EVENT_TYPE_STR.invokeExact(eventType);
            return s.equals(MemorySegment.NULL) ? "event " + eventType : s.reinterpret(128).getString(0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }
}
