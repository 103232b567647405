package dev.jrdma;

/**
 * {@link RdmaServingConformance} on the shm provider, both ends on this host: one-sided operations
 * on allocated regions are done on the peer's mapping, the rest goes over tcp.
 */
class RdmaServingShmTest extends RdmaServingConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
