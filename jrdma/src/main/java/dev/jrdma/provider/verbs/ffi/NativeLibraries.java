package dev.jrdma.provider.verbs.ffi;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.os.NativeCalls;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.util.Optional;

/**
 * Finds libibverbs, librdmacm and libc once per JVM and remembers why one could not be had.
 *
 * <p>Like Netty's {@code Epoll.isAvailable()}, loading never throws from a static initializer:
 * a missing library or missing native access leaves a lookup that finds nothing plus the cause,
 * and every binding made from it throws a {@link ProviderUnavailableException} with that cause.
 */
public final class NativeLibraries {
    /** Provider name used in availability exceptions. */
    public static final String PROVIDER = "verbs";

    public static final String IBVERBS_SONAME = "libibverbs.so.1";
    public static final String RDMACM_SONAME = "librdmacm.so.1";

    private static final Loaded IBVERBS = load(IBVERBS_SONAME, "libibverbs1 (Debian/Ubuntu) or rdma-core (RHEL/Fedora)");
    private static final Loaded RDMACM = load(RDMACM_SONAME, "librdmacm1 (Debian/Ubuntu) or librdmacm (RHEL/Fedora)");
    private static final Loaded LIBC = new Loaded(java.lang.foreign.Linker.nativeLinker().defaultLookup(), null);

    private NativeLibraries() {
    }

    /** A symbol lookup, or the reason there is none. */
    record Loaded(SymbolLookup lookup, ProviderUnavailableException cause) {
        Optional<java.lang.foreign.MemorySegment> find(String name) {
            return lookup == null ? Optional.empty() : lookup.find(name);
        }
    }

    static Loaded ibverbs() {
        return IBVERBS;
    }

    static Loaded rdmacm() {
        return RDMACM;
    }

    static Loaded libc() {
        return LIBC;
    }

    /**
     * The exact JVM flag that grants native access to jrdma, for the module jrdma runs in:
     * {@code --enable-native-access=dev.jrdma} on the module path,
     * {@code --enable-native-access=ALL-UNNAMED} on the class path.
     */
    public static String nativeAccessFlag() {
        return NativeCalls.nativeAccessFlag();
    }

    /** Whether the JVM lets jrdma call native code without warnings or errors. */
    public static boolean isNativeAccessEnabled() {
        return NativeCalls.isNativeAccessEnabled();
    }

    /** Null when libibverbs and librdmacm are loaded and native access is on; else the reason. */
    public static ProviderUnavailableException unavailabilityCause() {
        if (IBVERBS.cause() != null) {
            return IBVERBS.cause();
        }
        return RDMACM.cause();
    }

    /** Throws the reason libibverbs or librdmacm cannot be used, if there is one. */
    public static void ensureAvailable() {
        ProviderUnavailableException cause = unavailabilityCause();
        if (cause != null) {
            throw cause;
        }
    }

    static Loaded load(String soname, String packageHint) {
        if (!isNativeAccessEnabled()) {
            // Checked first: libraryLookup is itself a restricted method, and on JDK 25 without
            // the flag it only warns; we refuse instead, with the flag that fixes it.
            return new Loaded(null, new ProviderUnavailableException(PROVIDER,
                    "native access is not enabled for jrdma; start the JVM with " + nativeAccessFlag()));
        }
        try {
            return new Loaded(SymbolLookup.libraryLookup(soname, Arena.global()), null);
        } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
            return new Loaded(null, new ProviderUnavailableException(PROVIDER,
                    soname + " cannot be loaded (" + e.getMessage() + "); install " + packageHint, e));
        }
    }
}
