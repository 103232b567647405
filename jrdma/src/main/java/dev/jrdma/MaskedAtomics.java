package dev.jrdma;

/**
 * The arithmetic of the atomics that jrdma emulates with a compare-and-swap loop where the device
 * has no native form: masked compare-and-swap, masked fetch-and-add, atomic write.
 *
 * <p><b>What is atomic.</b> Each attempt is one RDMA compare-and-swap of the whole 8-byte word,
 * expecting the value the previous attempt saw (the first expects 0). The operation takes effect
 * at the attempt whose CAS succeeds, or, when the value seen needs no change (a masked compare
 * that does not match, an add of 0, a write of the value already there), at the CAS that saw it.
 * So towards every other atomic on the word (native or emulated, from any peer) it is atomic and
 * linearisable: nothing is lost or torn, and the prior value it reports is one the word really
 * had. It is not atomic towards plain RDMA writes or CPU stores to the word (native atomics are
 * not either on most devices). It is lock-free, not wait-free: under contention it retries, and
 * gives up with {@link dev.jrdma.exceptions.RdmaTimeoutException} after the connection's timeout.
 * Each attempt costs one round trip; a word that starts at 0 needs one.
 */
final class MaskedAtomics {
    private MaskedAtomics() {
    }

    /** The value the word should get, given it holds {@code v}; {@code v} itself when nothing is to change. */
    static long next(byte kind, long v, long a, long b, long c, long d) {
        return switch (kind) {
            case Connection.EMU_MASKED_CAS -> maskedCompareAndSwap(v, a, b, c, d);
            case Connection.EMU_MASKED_FAA -> maskedAdd(v, a, b);
            case Connection.EMU_ATOMIC_WRITE -> a;
            default -> throw new IllegalArgumentException("not an emulated atomic: " + kind);
        };
    }

    static String name(byte kind) {
        return switch (kind) {
            case Connection.EMU_MASKED_CAS -> "maskedCompareAndSwap";
            case Connection.EMU_MASKED_FAA -> "maskedFetchAndAdd";
            case Connection.EMU_ATOMIC_WRITE -> "atomicWrite";
            default -> "atomic " + kind;
        };
    }

    /** Masked CAS: when the compared bits match, the swapped bits are replaced; else no change. */
    static long maskedCompareAndSwap(long v, long compare, long compareMask, long swap, long swapMask) {
        if (((v ^ compare) & compareMask) != 0) {
            return v;
        }
        return (v & ~swapMask) | (swap & swapMask);
    }

    /**
     * Field-wise add: a set bit of {@code boundary} is the most significant bit of a field, and no
     * carry leaves it. (The sum of the words without their boundary bits cannot carry past a
     * boundary, since both have a 0 there; the boundary bits are then fixed up by xor.)
     */
    static long maskedAdd(long v, long add, long boundary) {
        return ((v & ~boundary) + (add & ~boundary)) ^ ((v ^ add) & boundary);
    }
}
