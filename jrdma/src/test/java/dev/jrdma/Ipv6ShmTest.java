package dev.jrdma;

/** {@link Ipv6Conformance} on shm. */
class Ipv6ShmTest extends Ipv6Conformance {
    @Override
    protected Transport transport() {
        return Transport.shmOverIpv6();
    }
}
