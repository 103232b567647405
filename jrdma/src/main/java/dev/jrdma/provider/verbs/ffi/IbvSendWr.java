package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import dev.jrdma.os.AddressSpace;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * {@code struct ibv_send_wr}: a send-queue work request (send, write, read, atomics), its opcode
 * and flag values, and allocation-free setters for the hot path.
 */
public final class IbvSendWr {
    static final StructLayout MW_BIND_INFO = struct("ibv_mw_bind_info",
            PTR.withName("mr"),
            U64.withName("addr"),
            U64.withName("length"),
            U32.withName("mw_access_flags"));

    public static final StructLayout LAYOUT = struct("ibv_send_wr",
            U64.withName("wr_id"),
            PTR.withName("next"),
            PTR.withName("sg_list"),
            INT.withName("num_sge"),
            INT.withName("opcode"),
            U32.withName("send_flags"),
            union(null, BE32.withName("imm_data"), U32.withName("invalidate_rkey")),
            union(null,
                    struct(null, U64.withName("remote_addr"), U32.withName("rkey")).withName("rdma"),
                    struct(null, U64.withName("remote_addr"), U64.withName("compare_add"), U64.withName("swap"),
                            U32.withName("rkey")).withName("atomic"),
                    struct(null, PTR.withName("ah"), U32.withName("remote_qpn"), U32.withName("remote_qkey"))
                            .withName("ud")).withName("wr"),
            union(null, struct(null, U32.withName("remote_srqn")).withName("xrc")).withName("qp_type"),
            union(null,
                    struct(null, PTR.withName("mw"), U32.withName("rkey"), MW_BIND_INFO.withName("bind_info"))
                            .withName("bind_mw"),
                    struct(null, PTR.withName("hdr"), U16.withName("hdr_sz"), U16.withName("mss")).withName("tso")));

    /** {@code enum ibv_wr_opcode}. */
    public static final int WR_RDMA_WRITE = 0, WR_RDMA_WRITE_WITH_IMM = 1, WR_SEND = 2, WR_SEND_WITH_IMM = 3,
            WR_RDMA_READ = 4, WR_ATOMIC_CMP_AND_SWP = 5, WR_ATOMIC_FETCH_AND_ADD = 6, WR_LOCAL_INV = 7,
            WR_BIND_MW = 8, WR_SEND_WITH_INV = 9, WR_TSO = 10, WR_ATOMIC_WRITE = 15;

    /** {@code enum ibv_send_flags}. */
    public static final int SEND_FENCE = 1, SEND_SIGNALED = 1 << 1, SEND_SOLICITED = 1 << 2, SEND_INLINE = 1 << 3;

    private static final long WR_ID = offset(LAYOUT, "wr_id");
    private static final long NEXT = offset(LAYOUT, "next");
    private static final long SG_LIST = offset(LAYOUT, "sg_list");
    private static final long NUM_SGE = offset(LAYOUT, "num_sge");
    private static final long OPCODE = offset(LAYOUT, "opcode");
    private static final long SEND_FLAGS = offset(LAYOUT, "send_flags");
    private static final long IMM_DATA = offset(LAYOUT, "imm_data");
    private static final long RDMA_REMOTE_ADDR = offset(LAYOUT, "wr.rdma.remote_addr");
    private static final long RDMA_RKEY = offset(LAYOUT, "wr.rdma.rkey");
    private static final long ATOMIC_REMOTE_ADDR = offset(LAYOUT, "wr.atomic.remote_addr");
    private static final long ATOMIC_COMPARE_ADD = offset(LAYOUT, "wr.atomic.compare_add");
    private static final long ATOMIC_SWAP = offset(LAYOUT, "wr.atomic.swap");
    private static final long ATOMIC_RKEY = offset(LAYOUT, "wr.atomic.rkey");
    private static final long UD_AH = offset(LAYOUT, "wr.ud.ah");
    private static final long UD_REMOTE_QPN = offset(LAYOUT, "wr.ud.remote_qpn");
    private static final long UD_REMOTE_QKEY = offset(LAYOUT, "wr.ud.remote_qkey");

    private static final long INVALIDATE_RKEY = offset(LAYOUT, "invalidate_rkey");
    private static final long BIND_MW = offset(LAYOUT, "bind_mw.mw");
    private static final long BIND_RKEY = offset(LAYOUT, "bind_mw.rkey");
    private static final long BIND_MR = offset(LAYOUT, "bind_mw.bind_info.mr");
    private static final long BIND_ADDR = offset(LAYOUT, "bind_mw.bind_info.addr");
    private static final long BIND_LENGTH = offset(LAYOUT, "bind_mw.bind_info.length");
    private static final long BIND_ACCESS = offset(LAYOUT, "bind_mw.bind_info.mw_access_flags");

    /** The size of one request: the stride of an array of them. */
    public static final long SIZE = LAYOUT.byteSize();

    private IbvSendWr() {
    }

    // The hot path's setters, by address (see AddressSpace): a queue pair stages its requests in
    // memory it owns, and each store here is a plain store.

    /** What never changes for the request at {@code wr}: its one-entry SGE list at {@code sge}, and no successor yet. */
    public static void presetAt(long wr, long sge) {
        AddressSpace.putLong(wr + SG_LIST, sge);
        AddressSpace.putLong(wr + NEXT, 0);
    }

    /** The header of the request at {@code wr} (its SGE list preset by {@link #presetAt}). */
    public static void setAt(long wr, long wrId, int numSge, int opcode, int sendFlags) {
        AddressSpace.putLong(wr + WR_ID, wrId);
        AddressSpace.putInt(wr + NUM_SGE, numSge);
        AddressSpace.putInt(wr + OPCODE, opcode);
        AddressSpace.putInt(wr + SEND_FLAGS, sendFlags);
    }

    /** An RDMA request's target and immediate data (given in host order, stored in network order). */
    public static void rdmaAt(long wr, long remoteAddr, int rkey, int imm) {
        AddressSpace.putLong(wr + RDMA_REMOTE_ADDR, remoteAddr);
        AddressSpace.putInt(wr + RDMA_RKEY, rkey);
        AddressSpace.putInt(wr + IMM_DATA, Integer.reverseBytes(imm));
    }

    /** An atomic request's target and operands. */
    public static void atomicAt(long wr, long remoteAddr, int rkey, long compareAdd, long swap) {
        AddressSpace.putLong(wr + ATOMIC_REMOTE_ADDR, remoteAddr);
        AddressSpace.putInt(wr + ATOMIC_RKEY, rkey);
        AddressSpace.putLong(wr + ATOMIC_COMPARE_ADD, compareAdd);
        AddressSpace.putLong(wr + ATOMIC_SWAP, swap);
    }

    /** The request after the one at {@code wr} in a chain (0: the last). */
    public static void nextAt(long wr, long next) {
        AddressSpace.putLong(wr + NEXT, next);
    }

    /**
     * The members of an {@code IBV_WR_BIND_MW}: window {@code mw} (type 2) gets {@code rkey} (its
     * current key with the low 8 bits stepped: {@link IbvMw#nextRkey}) over {@code [addr, addr +
     * length)} of {@code mr}, with {@code access} ({@code IBV_ACCESS_*}). Unbinding passes the MR
     * with length 0, never a NULL MR: rxe's provider dereferences it (rdma-core v44).
     */
    public static void bindMw(MemorySegment wr, MemorySegment mw, int rkey, MemorySegment mr, long addr, long length,
                              int access) {
        wr.set(PTR, BIND_MW, mw);
        wr.set(U32, BIND_RKEY, rkey);
        wr.set(PTR, BIND_MR, mr);
        wr.set(U64, BIND_ADDR, addr);
        wr.set(U64, BIND_LENGTH, length);
        wr.set(U32, BIND_ACCESS, access);
    }

    /** {@code invalidate_rkey} of an {@code IBV_WR_LOCAL_INV} (or SEND_WITH_INV). */
    public static void invalidateRkey(MemorySegment wr, int rkey) {
        wr.set(U32, INVALIDATE_RKEY, rkey);
    }

    /** Sets the members every work request has; clears {@code next} (a single WR). */
    public static void set(MemorySegment wr, long wrId, MemorySegment sgList, int numSge, int opcode, int sendFlags) {
        wr.set(U64, WR_ID, wrId);
        wr.set(PTR, NEXT, MemorySegment.NULL);
        wr.set(PTR, SG_LIST, sgList);
        wr.set(INT, NUM_SGE, numSge);
        wr.set(INT, OPCODE, opcode);
        wr.set(U32, SEND_FLAGS, sendFlags);
    }

    /** A UD send's destination: its address handle, QP number and Q_Key. */
    public static void ud(MemorySegment wr, MemorySegment ah, int remoteQpn, int remoteQkey) {
        wr.set(PTR, UD_AH, ah);
        wr.set(U32, UD_REMOTE_QPN, remoteQpn);
        wr.set(U32, UD_REMOTE_QKEY, remoteQkey);
    }

    /** Chains {@code next} after {@code wr} (one doorbell for a list of requests). */
    public static void next(MemorySegment wr, MemorySegment next) {
        wr.set(PTR, NEXT, next);
    }

    /** Immediate data, given in host order; stored in network byte order as the wire carries it. */
    public static void immData(MemorySegment wr, int imm) {
        wr.set(BE32, IMM_DATA, imm);
    }

    public static void rdma(MemorySegment wr, long remoteAddr, int rkey) {
        wr.set(U64, RDMA_REMOTE_ADDR, remoteAddr);
        wr.set(U32, RDMA_RKEY, rkey);
    }

    public static void atomic(MemorySegment wr, long remoteAddr, int rkey, long compareAdd, long swap) {
        wr.set(U64, ATOMIC_REMOTE_ADDR, remoteAddr);
        wr.set(U32, ATOMIC_RKEY, rkey);
        wr.set(U64, ATOMIC_COMPARE_ADD, compareAdd);
        wr.set(U64, ATOMIC_SWAP, swap);
    }
}
