package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code struct verbs_context}: the extended context an {@code ibv_context} sits at the end of.
 * verbs.h's inline {@code ibv_query_device_ex} and {@code ibv_query_port} call through it.
 *
 * <p>It "grows up": rdma-core adds members at the front, and the {@code context} member stays
 * last. So jrdma finds an op at a fixed distance <em>below</em> the {@code ibv_context} pointer,
 * and does what {@code verbs_get_ctx_op} does: use the op only if the provider's {@code sz}
 * covers it and the pointer is set.
 */
public final class VerbsContext {
    public static final StructLayout LAYOUT = struct("verbs_context", members());

    private static final long CONTEXT = offset(LAYOUT, "context");
    private static final long SZ = offset(LAYOUT, "sz");

    private VerbsContext() {
    }

    private static MemoryLayout[] members() {
        List<MemoryLayout> members = new ArrayList<>(List.of(IbvContext.pointers("query_port", "advise_mr",
                "alloc_null_mr", "read_counters", "attach_counters_point_flow", "create_counters",
                "destroy_counters", "reg_dm_mr", "alloc_dm", "free_dm", "modify_flow_action_esp",
                "destroy_flow_action", "create_flow_action_esp", "modify_qp_rate_limit", "alloc_parent_domain",
                "dealloc_td", "alloc_td", "modify_cq", "post_srq_ops", "destroy_rwq_ind_table",
                "create_rwq_ind_table", "destroy_wq", "modify_wq", "create_wq", "query_rt_values",
                "create_cq_ex", "priv", "query_device_ex", "ibv_destroy_flow", "ABI_placeholder2", "ibv_create_flow",
                "ABI_placeholder1", "open_qp", "create_qp_ex", "get_srq_num", "create_srq_ex", "open_xrcd",
                "close_xrcd")));
        members.add(U64.withName("_ABI_placeholder3"));
        members.add(SIZE_T.withName("sz"));
        members.add(IbvContext.LAYOUT.withName("context"));
        return members.toArray(MemoryLayout[]::new);
    }

    /**
     * The provider's function pointer for {@code op} (a member of struct verbs_context), or NULL
     * when the context is not extended, the provider's verbs_context is too small to have it, or
     * the provider leaves it unset: the same test as verbs.h's {@code verbs_get_ctx_op}.
     */
    public static MemorySegment op(MemorySegment ibvContext, String op) {
        if (!IbvContext.isExtended(ibvContext)) {
            return MemorySegment.NULL;
        }
        long opOffset = offset(LAYOUT, op);
        MemorySegment base = MemorySegment.ofAddress(ibvContext.address() - CONTEXT).reinterpret(CONTEXT);
        // verbs_get_ctx_op: a provider built against an older rdma-core has a smaller sz (its
        // verbs_context starts later), and then sz < sizeof(*vctx) - offsetof(op) says it lacks op.
        // Such a provider's struct also starts above ours, so read sz before anything else.
        long sz = base.get(SIZE_T, SZ);
        if (sz < LAYOUT.byteSize() - opOffset) {
            return MemorySegment.NULL;
        }
        return base.get(PTR, opOffset);
    }
}
