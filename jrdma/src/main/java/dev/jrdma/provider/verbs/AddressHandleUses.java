package dev.jrdma.provider.verbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Who may still use an evictable address handle: the sends in flight that hold it, and whether
 * the sender table still has it. Once {@link #retire}d (evicted) no send takes it again, and
 * exactly one caller, the eviction when no send holds it or else the last send to complete, is
 * told to destroy it. One word, changed by compare-and-set, so that the data path (a hold at
 * the post, a release at the completion) takes no lock.
 *
 * <pre>
 *   bit 30: RETIRED      bits 0..29: sends in flight that hold it
 * </pre>
 */
final class AddressHandleUses {
    private static final int RETIRED = 1 << 30;
    private static final int COUNT = RETIRED - 1;
    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(AddressHandleUses.class, "word", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused")   // through WORD
    private volatile int word;

    /** A send is about to use the handle: false once it is retired (the send must not be posted). */
    boolean hold() {
        for (int v = (int) WORD.getVolatile(this); (v & RETIRED) == 0; v = (int) WORD.getVolatile(this)) {
            if ((v & COUNT) == COUNT) {
                throw new IllegalStateException("more sends hold an address handle than a send queue has slots");
            }
            if (WORD.compareAndSet(this, v, v + 1)) {
                return true;
            }
        }
        return false;
    }

    /** A send that held it completed, or was not posted; {@return whether the caller must now destroy the handle} */
    boolean release() {
        int after = (int) WORD.getAndAdd(this, -1) - 1;
        if ((after & COUNT) == COUNT) {
            throw new IllegalStateException("an address handle released more often than held");
        }
        return after == RETIRED;
    }

    /** Evicted: no send takes it from now on; {@return whether the caller must now destroy the handle (none holds it)} */
    boolean retire() {
        int before = (int) WORD.getAndBitwiseOr(this, RETIRED);
        return before == 0;
    }

    /** {@return the sends that hold it now} */
    int held() {
        return (int) WORD.getVolatile(this) & COUNT;
    }

    /** {@return whether it was retired} */
    boolean retired() {
        return ((int) WORD.getVolatile(this) & RETIRED) != 0;
    }
}
