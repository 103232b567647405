package dev.jrdma.provider.verbs.ffi;

import dev.jrdma.exceptions.ProviderUnavailableException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/** Makes downcall handles; a symbol that is not there becomes a handle that throws why. */
final class Downcalls {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    /**
     * {@code -Djrdma.ffi.critical=false} turns the critical option off. The unit tests do, because
     * they stand Java upcalls in for provider ops, and a critical downcall that upcalls aborts the
     * JVM; real providers never call back, and the verbs suite runs with it on.
     */
    static final boolean CRITICAL = !"false".equals(System.getProperty("jrdma.ffi.critical"));

    private Downcalls() {
    }

    /** A handle for {@code name} whose first argument is the errno capture segment. */
    static MethodHandle withErrno(NativeLibraries.Loaded library, String name, FunctionDescriptor descriptor) {
        return bind(library, name, descriptor, CAPTURE_ERRNO);
    }

    /** A handle for {@code name} for functions that report errors through their return value. */
    static MethodHandle plain(NativeLibraries.Loaded library, String name, FunctionDescriptor descriptor) {
        return bind(library, name, descriptor);
    }

    /**
     * A handle that calls a function pointer passed as its first argument: how jrdma reaches the
     * verbs that are static inline in verbs.h ({@code ibv_post_send} and friends call through
     * {@code ibv_context.ops}). {@code critical} is for the hot, non-blocking ones: it skips the
     * thread-state transition, which is safe because they never block or call back into Java.
     */
    static MethodHandle pointer(FunctionDescriptor descriptor, boolean critical) {
        return critical && CRITICAL
                ? LINKER.downcallHandle(descriptor, Linker.Option.critical(false))
                : LINKER.downcallHandle(descriptor);
    }

    /** A function-pointer handle whose second argument (after the pointer) is the errno capture segment. */
    static MethodHandle pointerWithErrno(FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(descriptor, CAPTURE_ERRNO);
    }

    private static MethodHandle bind(NativeLibraries.Loaded library, String name, FunctionDescriptor descriptor,
                                     Linker.Option... options) {
        var symbol = library.find(name);
        if (symbol.isPresent()) {
            return LINKER.downcallHandle(symbol.get(), descriptor, options);
        }
        MethodType type = LINKER.downcallHandle(descriptor, options).type().dropParameterTypes(0, 1);
        ProviderUnavailableException why = library.cause() != null
                ? library.cause()
                : new ProviderUnavailableException(NativeLibraries.PROVIDER,
                        "the installed rdma-core has no function " + name + " (it is too old)");
        MethodHandle thrower = MethodHandles.throwException(type.returnType(), ProviderUnavailableException.class);
        thrower = MethodHandles.insertArguments(thrower, 0, why);
        return MethodHandles.dropArguments(thrower, 0, type.parameterList());
    }
}
