package dev.jrdma.exceptions;

/**
 * A native call into libibverbs, librdmacm or libc failed. Names the function, the errno and
 * its strerror text, so the message alone is enough to look the failure up in rdma-core.
 */
public class NativeRdmaException extends RdmaException {
    private static final long serialVersionUID = 1L;

    private final String function;
    private final int errno;
    private final String errnoName;

    public NativeRdmaException(String function, int errno, String errnoName, String strerror, String context) {
        super(function + " failed: " + (errnoName == null ? "errno " + errno : errnoName + " (" + errno + ")")
                + (strerror == null || strerror.isEmpty() ? "" : ", " + strerror)
                + (context == null || context.isEmpty() ? "" : " [" + context + "]"));
        this.function = function;
        this.errno = errno;
        this.errnoName = errnoName;
    }

    /** The native function that failed, e.g. {@code ibv_reg_mr}. */
    public String function() {
        return function;
    }

    /** The errno value the call left (or returned, for calls that return it). */
    public int errno() {
        return errno;
    }

    /** The symbolic errno name such as {@code EINVAL}, or null when unknown. */
    public String errnoName() {
        return errnoName;
    }
}
