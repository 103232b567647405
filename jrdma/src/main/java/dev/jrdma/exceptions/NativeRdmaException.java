package dev.jrdma.exceptions;

/**
 * A native call into libibverbs, librdmacm or libc failed. Names the function, the errno and
 * its strerror text, so the message alone is enough to look the failure up in rdma-core.
 */
public class NativeRdmaException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The native function that failed. */
    private final String function;
    /** The errno it left or returned. */
    private final int errno;
    /** The errno's symbolic name, or null. */
    private final String errnoName;

    /**
     * A failed native call: {@code function} failed with {@code errno} ({@code errnoName}, its symbolic
     * name, and {@code strerror}, its text; either may be null), while doing {@code context} (may be null).
     *
     * @param function the native function that failed, for example {@code ibv_reg_mr}
     * @param errno the errno it left or returned
     * @param errnoName the errno's symbolic name, for example {@code ENOMEM} (may be null)
     * @param strerror the errno's text (may be null)
     * @param context what the call was for (may be null)
     */
    public NativeRdmaException(String function, int errno, String errnoName, String strerror, String context) {
        super(function + " failed: " + (errnoName == null ? "errno " + errno : errnoName + " (" + errno + ")")
                + (strerror == null || strerror.isEmpty() ? "" : ", " + strerror)
                + (context == null || context.isEmpty() ? "" : " [" + context + "]"));
        this.function = function;
        this.errno = errno;
        this.errnoName = errnoName;
    }

    /** {@return the native function that failed, e.g} {@code ibv_reg_mr}. */
    public String function() {
        return function;
    }

    /** {@return the errno value the call left (or returned, for calls that return it)} */
    public int errno() {
        return errno;
    }

    /** {@return the symbolic errno name such as {@code EINVAL}, or null when unknown} */
    public String errnoName() {
        return errnoName;
    }
}
