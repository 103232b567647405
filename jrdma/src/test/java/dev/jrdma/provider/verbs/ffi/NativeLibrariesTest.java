package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.Errno;
import dev.jrdma.os.SockAddr;
import dev.jrdma.exceptions.NativeRdmaException;
import dev.jrdma.exceptions.ProviderUnavailableException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import org.junit.jupiter.api.Test;

/** Library loading and the failures around it: a missing library or symbol, errno translation. */
class NativeLibrariesTest {
    @Test
    void nativeAccessIsOnUnderTestAndTheFlagIsNamedExactly() {
        assertTrue(NativeLibraries.isNativeAccessEnabled(), "surefire passes --enable-native-access");
        assertEquals("--enable-native-access=ALL-UNNAMED", NativeLibraries.nativeAccessFlag());
    }

    @Test
    void installedLibrariesLoad() {
        // The build installs libibverbs1 and librdmacm1: both load here, device or not.
        assertNull(NativeLibraries.ibverbs().cause());
        assertNull(NativeLibraries.rdmacm().cause());
        assertTrue(NativeLibraries.ibverbs().find("ibv_get_device_list").isPresent());
    }

    @Test
    void aMissingLibraryIsUnavailableNamingItAndWhatToInstall() {
        NativeLibraries.Loaded loaded = NativeLibraries.load("libjrdma-no-such-lib.so.9", "the-package");
        ProviderUnavailableException cause = loaded.cause();
        assertNotNull(cause);
        assertEquals("verbs", cause.provider());
        assertTrue(cause.getMessage().contains("libjrdma-no-such-lib.so.9") && cause.getMessage().contains("install the-package"),
                cause.getMessage());
        // Every binding made from it throws that cause instead of crashing.
        MethodHandle h = Downcalls.plain(loaded, "ibv_open_device",
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        ProviderUnavailableException thrown = assertThrows(ProviderUnavailableException.class,
                () -> { var unused = (java.lang.foreign.MemorySegment) h.invokeExact(java.lang.foreign.MemorySegment.NULL); });
        assertEquals(cause, thrown);
    }

    @Test
    void aMissingSymbolSaysRdmaCoreIsTooOld() {
        MethodHandle h = Downcalls.withErrno(NativeLibraries.ibverbs(), "ibv_no_such_verb",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        ProviderUnavailableException e = assertThrows(ProviderUnavailableException.class,
                () -> { int unused = (int) h.invokeExact(Errno.capture(), java.lang.foreign.MemorySegment.NULL); });
        assertTrue(e.getMessage().contains("ibv_no_such_verb") && e.getMessage().contains("too old"), e.getMessage());
    }

    @Test
    void errnoBecomesAnExceptionNamingCallErrnoAndText() {
        NativeRdmaException e = Errno.failure("ibv_reg_mr", Errno.ENOMEM, "4096 bytes");
        assertEquals("ibv_reg_mr", e.function());
        assertEquals(12, e.errno());
        assertEquals("ENOMEM", e.errnoName());
        assertEquals("ibv_reg_mr failed: ENOMEM (12), Cannot allocate memory [4096 bytes]", e.getMessage());
        assertEquals("errno 4242", Errno.failure("x", 4242, null).getMessage().replaceAll("^x failed: (errno 4242).*", "$1"));
    }

    @Test
    void checkAcceptsBothErrorConventions() {
        Errno.check(0, "ibv_dereg_mr", null);
        NativeRdmaException direct = assertThrows(NativeRdmaException.class, () -> Errno.check(Errno.EBUSY, "ibv_dealloc_pd", null));
        assertEquals(Errno.EBUSY, direct.errno(), "verbs that return the errno");
    }

    @Test
    void anUnresolvedAddressIsRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SockAddr.of(java.net.InetSocketAddress.createUnresolved("no.such.host", 1), java.lang.foreign.Arena.ofAuto()));
        assertTrue(e.getMessage().contains("no.such.host") && e.getMessage().contains("unresolved"), e.getMessage());
    }
}
