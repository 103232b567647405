package dev.jrdma;

/**
 * {@link RdmaOperationsConformance} on the shm provider, both ends on this host: one-sided operations
 * on allocated regions are done on the peer's mapping, the rest goes over tcp.
 */
class RdmaOperationsShmTest extends RdmaOperationsConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
