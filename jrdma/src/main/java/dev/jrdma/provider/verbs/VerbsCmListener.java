package dev.jrdma.provider.verbs;

import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.spi.CmListener;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

/** A listening rdma_cm id. */
final class VerbsCmListener implements CmListener {
    final MemorySegment id;
    private final InetSocketAddress address;
    private final VerbsConnectionManager manager;
    private boolean closed;

    VerbsCmListener(VerbsConnectionManager manager, MemorySegment id, InetSocketAddress address) {
        this.manager = manager;
        this.id = id;
        this.address = address;
    }

    @Override
    public InetSocketAddress address() {
        return address;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            manager.forget(id);
            LibRdmacm.destroyId(id);
        }
    }
}
