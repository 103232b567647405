package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code struct ibv_context} with its {@code struct ibv_context_ops}: the table through which
 * the static-inline verbs of verbs.h ({@code ibv_post_send}, {@code ibv_post_recv},
 * {@code ibv_poll_cq}, {@code ibv_req_notify_cq}, {@code ibv_post_srq_recv}) reach the provider.
 */
public final class IbvContext {
    private static final String[] OPS = {
        "_compat_query_device", "_compat_query_port", "_compat_alloc_pd", "_compat_dealloc_pd",
        "_compat_reg_mr", "_compat_rereg_mr", "_compat_dereg_mr", "alloc_mw", "bind_mw", "dealloc_mw",
        "_compat_create_cq", "poll_cq", "req_notify_cq", "_compat_cq_event", "_compat_resize_cq",
        "_compat_destroy_cq", "_compat_create_srq", "_compat_modify_srq", "_compat_query_srq",
        "_compat_destroy_srq", "post_srq_recv", "_compat_create_qp", "_compat_query_qp",
        "_compat_modify_qp", "_compat_destroy_qp", "post_send", "post_recv", "_compat_create_ah",
        "_compat_destroy_ah", "_compat_attach_mcast", "_compat_detach_mcast", "_compat_async_event",
    };

    public static final StructLayout OPS_LAYOUT = struct("ibv_context_ops", pointers(OPS));

    public static final StructLayout LAYOUT = struct("ibv_context",
            PTR.withName("device"),
            OPS_LAYOUT.withName("ops"),
            INT.withName("cmd_fd"),
            INT.withName("async_fd"),
            INT.withName("num_comp_vectors"),
            PTHREAD_MUTEX.withName("mutex"),
            PTR.withName("abi_compat"));

    private static final long DEVICE = offset(LAYOUT, "device");
    private static final long POLL_CQ = offset(LAYOUT, "ops.poll_cq");
    private static final long REQ_NOTIFY_CQ = offset(LAYOUT, "ops.req_notify_cq");
    private static final long POST_SEND = offset(LAYOUT, "ops.post_send");
    private static final long ALLOC_MW = offset(LAYOUT, "ops.alloc_mw");
    private static final long DEALLOC_MW = offset(LAYOUT, "ops.dealloc_mw");
    private static final long POST_RECV = offset(LAYOUT, "ops.post_recv");
    private static final long POST_SRQ_RECV = offset(LAYOUT, "ops.post_srq_recv");
    private static final long ASYNC_FD = offset(LAYOUT, "async_fd");
    private static final long NUM_COMP_VECTORS = offset(LAYOUT, "num_comp_vectors");
    private static final long ABI_COMPAT = offset(LAYOUT, "abi_compat");

    private IbvContext() {
    }

    static MemoryLayout[] pointers(String... names) {
        List<MemoryLayout> list = new ArrayList<>();
        for (String n : names) {
            list.add(PTR.withName(n));
        }
        return list.toArray(MemoryLayout[]::new);
    }

    /** A view of a context pointer returned by {@code ibv_open_device} with the struct's size. */
    public static MemorySegment of(MemorySegment context) {
        return context.reinterpret(LAYOUT.byteSize());
    }

    public static MemorySegment device(MemorySegment ctx) { return of(ctx).get(PTR, DEVICE); }
    public static MemorySegment pollCqFn(MemorySegment ctx) { return of(ctx).get(PTR, POLL_CQ); }
    public static MemorySegment reqNotifyCqFn(MemorySegment ctx) { return of(ctx).get(PTR, REQ_NOTIFY_CQ); }
    public static MemorySegment postSendFn(MemorySegment ctx) { return of(ctx).get(PTR, POST_SEND); }
    /** {@code ops.alloc_mw}: libibverbs fills it with a dummy that fails EOPNOTSUPP where the provider has none. */
    public static MemorySegment allocMwFn(MemorySegment ctx) { return of(ctx).get(PTR, ALLOC_MW); }
    public static MemorySegment deallocMwFn(MemorySegment ctx) { return of(ctx).get(PTR, DEALLOC_MW); }
    public static MemorySegment postRecvFn(MemorySegment ctx) { return of(ctx).get(PTR, POST_RECV); }
    public static MemorySegment postSrqRecvFn(MemorySegment ctx) { return of(ctx).get(PTR, POST_SRQ_RECV); }
    public static int asyncFd(MemorySegment ctx) { return of(ctx).get(INT, ASYNC_FD); }
    public static int numCompVectors(MemorySegment ctx) { return of(ctx).get(INT, NUM_COMP_VECTORS); }

    /** True when the context is embedded in a {@code struct verbs_context} (every current provider). */
    public static boolean isExtended(MemorySegment ctx) {
        // __VERBS_ABI_IS_EXTENDED is (void *) UINTPTR_MAX
        return of(ctx).get(PTR, ABI_COMPAT).address() == -1L;
    }
}
