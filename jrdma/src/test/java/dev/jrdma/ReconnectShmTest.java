package dev.jrdma;

/** {@link ReconnectConformance} on the shm provider, both ends on this host. */
class ReconnectShmTest extends ReconnectConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
