package dev.jrdma.provider.verbs.ffi;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/** {@code struct ibv_comp_channel}: a completion event channel; its fd works with poll/epoll. */
public final class IbvCompChannel {
    public static final StructLayout LAYOUT = struct("ibv_comp_channel",
            PTR.withName("context"),
            INT.withName("fd"),
            INT.withName("refcnt"));

    private IbvCompChannel() {
    }

    public static int fd(MemorySegment channel) {
        return channel.reinterpret(LAYOUT.byteSize()).get(INT, offset(LAYOUT, "fd"));
    }
}
