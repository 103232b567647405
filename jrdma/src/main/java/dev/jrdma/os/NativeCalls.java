package dev.jrdma.os;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Downcall handles to libc, and the one way a failed {@code invokeExact} is rethrown. libc is
 * always there (the JVM itself links it), so a missing symbol is a broken platform and fails
 * the class that binds it, at once and by name.
 */
public final class NativeCalls {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private NativeCalls() {
    }

    /** The address of libc's {@code name}. */
    public static MemorySegment symbol(String name) {
        return LINKER.defaultLookup().find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
    }

    /** A handle for libc's {@code name} whose first argument is the errno capture segment ({@link Errno#capture()}). */
    public static MethodHandle withErrno(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor, CAPTURE_ERRNO);
    }

    /** A handle for libc's {@code name}, for functions that report errors through their return value. */
    public static MethodHandle plain(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor);
    }

    /**
     * What a {@code catch (Throwable t)} around {@code invokeExact} throws: runtime exceptions
     * and errors as they are, anything else (a downcall declares Throwable but throws no checked
     * exception) wrapped. Use as {@code throw NativeCalls.rethrow(t)}.
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    /** Whether the JVM lets jrdma call native code without warnings or errors. */
    public static boolean isNativeAccessEnabled() {
        return NativeCalls.class.getModule().isNativeAccessEnabled();
    }

    /**
     * The exact JVM flag that grants native access to jrdma, for the module jrdma runs in:
     * {@code --enable-native-access=dev.jrdma} on the module path,
     * {@code --enable-native-access=ALL-UNNAMED} on the class path.
     */
    public static String nativeAccessFlag() {
        Module module = NativeCalls.class.getModule();
        return "--enable-native-access=" + (module.isNamed() ? module.getName() : "ALL-UNNAMED");
    }
}
