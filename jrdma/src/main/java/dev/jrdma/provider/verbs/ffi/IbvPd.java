package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.StructLayout;

/** {@code struct ibv_pd}: a protection domain. */
public final class IbvPd {
    public static final StructLayout LAYOUT = struct("ibv_pd",
            PTR.withName("context"),
            U32.withName("handle"));

    private IbvPd() {
    }
}
