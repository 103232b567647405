package dev.jrdma;

/** {@link DatagramConformance} on shm (its datagrams are the tcp provider's UDP sockets). */
class DatagramShmTest extends DatagramConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
