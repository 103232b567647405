package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;
import static java.lang.foreign.FunctionDescriptor.of;
import static java.lang.foreign.FunctionDescriptor.ofVoid;

import dev.jrdma.os.Errno;
import dev.jrdma.os.NativeCalls;
import dev.jrdma.os.SockAddr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * librdmacm.so.1 through FFM: event channels, ids, address and route resolution, listen /
 * connect / accept / reject / disconnect, connection events with private data, and QPs made
 * on an id. librdmacm returns -1 and sets errno; each method here throws
 * {@link dev.jrdma.exceptions.NativeRdmaException} instead.
 */
public final class LibRdmacm {
    private static final NativeLibraries.Loaded LIB = NativeLibraries.rdmacm();

    private static final MethodHandle CREATE_EVENT_CHANNEL = Downcalls.withErrno(LIB, "rdma_create_event_channel", of(PTR));
    private static final MethodHandle DESTROY_EVENT_CHANNEL = Downcalls.plain(LIB, "rdma_destroy_event_channel", ofVoid(PTR));
    private static final MethodHandle CREATE_ID = Downcalls.withErrno(LIB, "rdma_create_id", of(INT, PTR, PTR, PTR, INT));
    private static final MethodHandle DESTROY_ID = Downcalls.withErrno(LIB, "rdma_destroy_id", of(INT, PTR));
    private static final MethodHandle BIND_ADDR = Downcalls.withErrno(LIB, "rdma_bind_addr", of(INT, PTR, PTR));
    private static final MethodHandle RESOLVE_ADDR = Downcalls.withErrno(LIB, "rdma_resolve_addr", of(INT, PTR, PTR, PTR, INT));
    private static final MethodHandle RESOLVE_ROUTE = Downcalls.withErrno(LIB, "rdma_resolve_route", of(INT, PTR, INT));
    private static final MethodHandle CREATE_QP = Downcalls.withErrno(LIB, "rdma_create_qp", of(INT, PTR, PTR, PTR));
    private static final MethodHandle DESTROY_QP = Downcalls.plain(LIB, "rdma_destroy_qp", ofVoid(PTR));
    private static final MethodHandle CONNECT = Downcalls.withErrno(LIB, "rdma_connect", of(INT, PTR, PTR));
    private static final MethodHandle LISTEN = Downcalls.withErrno(LIB, "rdma_listen", of(INT, PTR, INT));
    private static final MethodHandle GET_REQUEST = Downcalls.withErrno(LIB, "rdma_get_request", of(INT, PTR, PTR));
    private static final MethodHandle ACCEPT = Downcalls.withErrno(LIB, "rdma_accept", of(INT, PTR, PTR));
    private static final MethodHandle REJECT = Downcalls.withErrno(LIB, "rdma_reject", of(INT, PTR, PTR, U8));
    private static final MethodHandle DISCONNECT = Downcalls.withErrno(LIB, "rdma_disconnect", of(INT, PTR));
    private static final MethodHandle GET_CM_EVENT = Downcalls.withErrno(LIB, "rdma_get_cm_event", of(INT, PTR, PTR));
    private static final MethodHandle ACK_CM_EVENT = Downcalls.withErrno(LIB, "rdma_ack_cm_event", of(INT, PTR));
    private static final MethodHandle EVENT_STR = Downcalls.plain(LIB, "rdma_event_str", of(PTR, INT));
    private static final MethodHandle GET_DEVICES = Downcalls.withErrno(LIB, "rdma_get_devices", of(PTR, PTR));
    private static final MethodHandle FREE_DEVICES = Downcalls.plain(LIB, "rdma_free_devices", ofVoid(PTR));
    private static final MethodHandle SET_OPTION = Downcalls.withErrno(LIB, "rdma_set_option", of(INT, PTR, INT, INT, PTR, SIZE_T));
    private static final MethodHandle JOIN_MULTICAST = Downcalls.withErrno(LIB, "rdma_join_multicast", of(INT, PTR, PTR, PTR));
    private static final MethodHandle LEAVE_MULTICAST = Downcalls.withErrno(LIB, "rdma_leave_multicast", of(INT, PTR, PTR));
    private static final MethodHandle MIGRATE_ID = Downcalls.withErrno(LIB, "rdma_migrate_id", of(INT, PTR, PTR));

    private LibRdmacm() {
    }

    private static void check(int rc, String function, String context) {
        Errno.check(rc, function, context);
    }

    /** {@code rdma_create_event_channel}; its fd (first int of the struct) works with poll/epoll. */
    public static MemorySegment createEventChannel() {
        try {
            MemorySegment ch = (MemorySegment) CREATE_EVENT_CHANNEL.invokeExact(Errno.capture());
            if (ch.equals(MemorySegment.NULL)) {
                throw Errno.failure("rdma_create_event_channel", "is /dev/infiniband/rdma_cm there (module rdma_ucm)?");
            }
            return ch.reinterpret(INT.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The fd of an event channel. */
    public static int eventChannelFd(MemorySegment channel) {
        return channel.reinterpret(INT.byteSize()).get(INT, 0);
    }

    public static void destroyEventChannel(MemorySegment channel) {
        try {
            DESTROY_EVENT_CHANNEL.invokeExact(channel);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_create_id} in {@code portSpace} (e.g. {@link RdmaCmId#PS_TCP} for RC). */
    public static MemorySegment createId(MemorySegment channel, int portSpace, Arena arena) {
        MemorySegment out = arena.allocate(PTR);
        try {
            check((int) CREATE_ID.invokeExact(Errno.capture(), channel, out, MemorySegment.NULL, portSpace),
                    "rdma_create_id", null);
            return out.get(PTR, 0).reinterpret(RdmaCmId.LAYOUT.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyId(MemorySegment id) {
        try {
            check((int) DESTROY_ID.invokeExact(Errno.capture(), id), "rdma_destroy_id", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void bindAddr(MemorySegment id, MemorySegment sockaddr) {
        try {
            check((int) BIND_ADDR.invokeExact(Errno.capture(), id, sockaddr), "rdma_bind_addr",
                    String.valueOf(SockAddr.toInet(sockaddr)));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_resolve_addr}; {@code src} may be NULL. Completes with ADDR_RESOLVED or ADDR_ERROR. */
    public static void resolveAddr(MemorySegment id, MemorySegment src, MemorySegment dst, int timeoutMs) {
        try {
            check((int) RESOLVE_ADDR.invokeExact(Errno.capture(), id, src, dst, timeoutMs), "rdma_resolve_addr",
                    "to " + SockAddr.toInet(dst));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_resolve_route}. Completes with ROUTE_RESOLVED or ROUTE_ERROR. */
    public static void resolveRoute(MemorySegment id, int timeoutMs) {
        try {
            check((int) RESOLVE_ROUTE.invokeExact(Errno.capture(), id, timeoutMs), "rdma_resolve_route", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code rdma_create_qp}: a QP on the id's device, which rdma_cm then moves through
     * INIT/RTR/RTS itself during connect/accept. {@code initAttr} caps are updated in place.
     */
    public static MemorySegment createQp(MemorySegment id, MemorySegment pd, MemorySegment initAttr) {
        try {
            check((int) CREATE_QP.invokeExact(Errno.capture(), id, pd, initAttr), "rdma_create_qp", null);
            return RdmaCmId.qp(id);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void destroyQp(MemorySegment id) {
        try {
            DESTROY_QP.invokeExact(id);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code enum rdma_option_level} RDMA_OPTION_ID and its options RDMA_OPTION_ID_TOS and
     * RDMA_OPTION_ID_ACK_TIMEOUT (each a u8).
     */
    static final int OPTION_ID = 0, OPTION_ID_TOS = 0, OPTION_ID_ACK_TIMEOUT = 3;

    /**
     * {@code rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS)}: the traffic class of the
     * id's path; before {@code rdma_resolve_route}, which builds the path with it (on RoCE the
     * GRH's traffic class, and the service level through the netdev's priority map), or on a
     * listener, whose connection ids inherit it.
     */
    public static void setTos(MemorySegment id, int tos) {
        setU8Option(id, OPTION_ID_TOS, tos, "RDMA_OPTION_ID_TOS " + tos);
    }

    /**
     * {@code rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT)}: the QP's local ack
     * timeout exponent, applied when rdma_cm moves the QP to RTS; so it must come before
     * {@link #connect} (active side) or {@link #accept} (passive side). Without it rdma_cm derives
     * the timeout from the path's packet life time.
     */
    public static void setAckTimeout(MemorySegment id, int exponent) {
        setU8Option(id, OPTION_ID_ACK_TIMEOUT, exponent, "RDMA_OPTION_ID_ACK_TIMEOUT " + exponent);
    }

    /** {@code RDMA_OPTION_IB} and its option {@code RDMA_OPTION_IB_PATH} ({@code struct ibv_path_data[]}). */
    static final int OPTION_IB = 1, OPTION_IB_PATH = 1;

    /**
     * {@code rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH)}: the id's path, given instead
     * of {@code rdma_resolve_route} once its address is resolved; completes with ROUTE_RESOLVED as
     * a resolved route does (the kernel queues that event itself).
     *
     * @param id       an id whose address is resolved
     * @param pathData an {@link IbvPathData}
     */
    public static void setIbPath(MemorySegment id, MemorySegment pathData) {
        try {
            check((int) SET_OPTION.invokeExact(Errno.capture(), id, OPTION_IB, OPTION_IB_PATH, pathData,
                    IbvPathData.LAYOUT.byteSize()), "rdma_set_option", "RDMA_OPTION_IB_PATH");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_set_option(id, RDMA_OPTION_ID, option)} with a u8 value (the kernel wants exactly one byte). */
    private static void setU8Option(MemorySegment id, int option, int value, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(U8);
            v.set(U8, 0, (byte) value);
            check((int) SET_OPTION.invokeExact(Errno.capture(), id, OPTION_ID, option, v, U8.byteSize()), "rdma_set_option", what);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void connect(MemorySegment id, MemorySegment connParam) {
        try {
            check((int) CONNECT.invokeExact(Errno.capture(), id, connParam), "rdma_connect", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void listen(MemorySegment id, int backlog) {
        try {
            check((int) LISTEN.invokeExact(Errno.capture(), id, backlog), "rdma_listen", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_get_request}: the next connect request on a synchronous listening id (no channel). */
    public static MemorySegment getRequest(MemorySegment listenId, Arena arena) {
        MemorySegment out = arena.allocate(PTR);
        try {
            check((int) GET_REQUEST.invokeExact(Errno.capture(), listenId, out), "rdma_get_request", null);
            return out.get(PTR, 0).reinterpret(RdmaCmId.LAYOUT.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void accept(MemorySegment id, MemorySegment connParam) {
        try {
            check((int) ACCEPT.invokeExact(Errno.capture(), id, connParam), "rdma_accept", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_reject} with optional private data (NULL and 0 for none). */
    public static void reject(MemorySegment id, MemorySegment privateData, int length) {
        try {
            check((int) REJECT.invokeExact(Errno.capture(), id, privateData, (byte) length), "rdma_reject", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void disconnect(MemorySegment id) {
        try {
            check((int) DISCONNECT.invokeExact(Errno.capture(), id), "rdma_disconnect", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code rdma_get_cm_event}: the next event on the channel. Blocks unless the channel's fd is
     * non-blocking (then EAGAIN, reported as a NativeRdmaException); poll the fd for a bounded
     * wait. Every event must be given back with {@link #ackCmEvent}.
     */
    public static MemorySegment getCmEvent(MemorySegment channel, Arena arena) {
        MemorySegment out = arena.allocate(PTR);
        try {
            check((int) GET_CM_EVENT.invokeExact(Errno.capture(), channel, out), "rdma_get_cm_event", null);
            return out.get(PTR, 0).reinterpret(RdmaCmEvent.LAYOUT.byteSize());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code rdma_get_cm_event} on a channel whose fd is non-blocking: the next event, or null
     * when there is none (EAGAIN). {@code out}: pointer-sized scratch.
     */
    public static MemorySegment tryGetCmEvent(MemorySegment channel, MemorySegment out) {
        try {
            if ((int) GET_CM_EVENT.invokeExact(Errno.capture(), channel, out) == 0) {
                return out.get(PTR, 0).reinterpret(RdmaCmEvent.LAYOUT.byteSize());
            }
            int errno = Errno.last();
            if (errno == Errno.EAGAIN) {
                return null;
            }
            throw Errno.failure("rdma_get_cm_event", errno, null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void ackCmEvent(MemorySegment event) {
        try {
            check((int) ACK_CM_EVENT.invokeExact(Errno.capture(), event), "rdma_ack_cm_event", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code rdma_get_devices}: the verbs contexts librdmacm opened, one per device, NULL-ended.
     * Every cm id on a device carries this same context, so a PD allocated on it serves all of
     * that device's connections. Give the array back with {@link #freeDevices}, which does not
     * close the contexts (librdmacm owns them).
     */
    public static MemorySegment getDevices(Arena arena, int[] count) {
        MemorySegment n = arena.allocate(INT);
        try {
            MemorySegment list = (MemorySegment) GET_DEVICES.invokeExact(Errno.capture(), n);
            if (list.equals(MemorySegment.NULL)) {
                throw Errno.failure("rdma_get_devices", "is /dev/infiniband/rdma_cm there (module rdma_ucm)?");
            }
            count[0] = n.get(INT, 0);
            return list.reinterpret(PTR.byteSize() * (count[0] + 1L));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static void freeDevices(MemorySegment list) {
        try {
            FREE_DEVICES.invokeExact(list);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * {@code rdma_join_multicast}: joins the group at {@code addr} (a sockaddr) on the id's device;
     * completes with MULTICAST_JOIN (its {@code param.ud} names the group's AH, QPN and Q_Key) or
     * MULTICAST_ERROR. A QP rdma_cm made for the id is attached to the group by librdmacm.
     */
    public static void joinMulticast(MemorySegment id, MemorySegment addr, MemorySegment context) {
        try {
            check((int) JOIN_MULTICAST.invokeExact(Errno.capture(), id, addr, context), "rdma_join_multicast",
                    String.valueOf(SockAddr.toInet(addr)));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_leave_multicast}: leaves (and detaches the id's QP from) the group at {@code addr}. */
    public static void leaveMulticast(MemorySegment id, MemorySegment addr) {
        try {
            check((int) LEAVE_MULTICAST.invokeExact(Errno.capture(), id, addr), "rdma_leave_multicast",
                    String.valueOf(SockAddr.toInet(addr)));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** {@code rdma_migrate_id}: move an id (e.g. an accepted one) to another event channel. */
    public static void migrateId(MemorySegment id, MemorySegment channel) {
        try {
            check((int) MIGRATE_ID.invokeExact(Errno.capture(), id, channel), "rdma_migrate_id", null);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public static String eventStr(int event) {
        try {
            MemorySegment s = (MemorySegment) EVENT_STR.invokeExact(event);
            return s.equals(MemorySegment.NULL) ? RdmaCmEvent.name(event) : s.reinterpret(128).getString(0);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }
}
