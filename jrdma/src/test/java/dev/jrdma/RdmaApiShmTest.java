package dev.jrdma;

/**
 * {@link RdmaApiConformance} on the shm provider, both ends on this host: one-sided operations
 * on allocated regions are done on the peer's mapping, the rest goes over tcp.
 */
class RdmaApiShmTest extends RdmaApiConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
