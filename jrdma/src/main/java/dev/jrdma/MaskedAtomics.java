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
    static long next(Operation op, long v, long a, long b, long c, long d) {
        return switch (op) {
            case MASKED_COMPARE_AND_SWAP -> maskedCompareAndSwap(v, a, b, c, d);
            case MASKED_FETCH_AND_ADD -> maskedAdd(v, a, b);
            case ATOMIC_WRITE -> a;
            default -> throw new IllegalArgumentException("not an emulated atomic: " + op);
        };
    }

    /**
     * The attempt of {@code o} whose compare-and-swap returned {@code v} settled the operation:
     * that CAS took effect ({@code v} is what it expected), or {@code v} needs no change (the CAS
     * read it atomically, so it is the result).
     */
    static boolean settled(SendOperation o, long v) {
        return v == o.expected || next(o.op, v, o.a, o.b, o.c, o.d) == v;
    }

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
