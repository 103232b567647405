package dev.jrdma;

import dev.jrdma.spi.QueuePair;

/**
 * What a send-queue operation is: its name in messages, the work request that carries it, what
 * it needs from the local and remote regions, and whether it ends with an 8-byte value. Every
 * public operation of {@link Connection} is one of these, posted by {@link SendQueue#post}.
 */
enum Operation {
    SEND("send", QueuePair.WR_SEND, null, Shape.MESSAGE),
    SEND_WITH_IMM("sendWithImm", QueuePair.WR_SEND_WITH_IMM, null, Shape.MESSAGE),
    WRITE("write", QueuePair.WR_RDMA_WRITE, Access.REMOTE_WRITE, Shape.TRANSFER),
    WRITE_WITH_IMM("writeWithImm", QueuePair.WR_RDMA_WRITE_WITH_IMM, Access.REMOTE_WRITE, Shape.TRANSFER),
    READ("read", QueuePair.WR_RDMA_READ, Access.REMOTE_READ, Shape.TRANSFER),
    COMPARE_AND_SWAP("compareAndSwap", QueuePair.WR_ATOMIC_CMP_AND_SWP, Access.REMOTE_ATOMIC, Shape.ATOMIC),
    FETCH_AND_ADD("fetchAndAdd", QueuePair.WR_ATOMIC_FETCH_AND_ADD, Access.REMOTE_ATOMIC, Shape.ATOMIC),
    /** Emulated: a compare-and-swap loop (see {@link MaskedAtomics}); the arguments are compare, compareMask, swap, swapMask. */
    MASKED_COMPARE_AND_SWAP("maskedCompareAndSwap", QueuePair.WR_ATOMIC_CMP_AND_SWP, Access.REMOTE_ATOMIC, Shape.EMULATED),
    /** Emulated; the arguments are add, fieldBoundaryMask. */
    MASKED_FETCH_AND_ADD("maskedFetchAndAdd", QueuePair.WR_ATOMIC_CMP_AND_SWP, Access.REMOTE_ATOMIC, Shape.EMULATED),
    /** Emulated; the argument is the value. */
    ATOMIC_WRITE("atomicWrite", QueuePair.WR_ATOMIC_CMP_AND_SWP, Access.REMOTE_ATOMIC, Shape.EMULATED),
    /**
     * {@code IBV_WR_FLUSH} where the device has it, else a 1-byte read after the writes; the first
     * argument is 1 for persistence. Needs REMOTE_READ either way (the read form does).
     */
    FLUSH("flush", QueuePair.WR_FLUSH, Access.REMOTE_READ, Shape.FLUSH),
    /** A type 2 memory window bound for {@link LocalRegion#toRemoteFor} ({@link SendQueue#bindWindow}). */
    BIND_WINDOW("toRemoteFor", QueuePair.WR_BIND_MW, null, Shape.WINDOW);

    /** How an operation uses its regions. */
    enum Shape {
        /** A local buffer, no remote region: its bytes go into the peer's posted receive. */
        MESSAGE,
        /** A local buffer and a remote region of at least its length. */
        TRANSFER,
        /** No local buffer: 8 bytes at an aligned remote address, the prior value into a scratch word. */
        ATOMIC,
        /** Like ATOMIC, posted again until the compare-and-swap takes effect. */
        EMULATED,
        /** No local buffer: a range of the remote region. */
        FLUSH,
        /** No regions: a memory window over a registration of this side, posted by the library itself. */
        WINDOW
    }

    final String label;
    /** The {@code ibv_wr_opcode} of its (first) work request. */
    final int wire;
    /** What the remote region's descriptor must grant; null for messages. */
    final Access access;
    final Shape shape;
    /** It reads an 8-byte word: its value (the prior one) lands in the slot's scratch word. */
    final boolean atomic;
    /** Its public name, which statistics and events count it by. */
    final OperationType type;
    /** {@code type.ordinal()}, one load fewer on the completion path. */
    final int typeIndex;

    Operation(String label, int wire, Access access, Shape shape) {
        this.type = OperationType.valueOf(name());
        this.typeIndex = type.ordinal();
        this.label = label;
        this.wire = wire;
        this.access = access;
        this.shape = shape;
        this.atomic = shape == Shape.ATOMIC || shape == Shape.EMULATED;
    }
}
