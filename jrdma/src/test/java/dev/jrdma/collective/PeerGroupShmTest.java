package dev.jrdma.collective;

/** {@link PeerGroupConformance} on shm, every member on this host. */
class PeerGroupShmTest extends PeerGroupConformance {
    @Override
    protected String provider() {
        return "shm";
    }
}
