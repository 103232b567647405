package dev.jrdma;

/** {@link SharedReceiveQueueConformance} on shm. */
class SharedReceiveQueueShmTest extends SharedReceiveQueueConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }

    @Override
    protected int fanInConnections() {
        return 256;
    }
}
