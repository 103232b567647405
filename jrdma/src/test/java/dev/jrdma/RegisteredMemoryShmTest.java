package dev.jrdma;

/** {@link RegisteredMemoryConformance} on the shm provider, both ends on this host. */
class RegisteredMemoryShmTest extends RegisteredMemoryConformance {
    @Override
    protected Transport transport() {
        return Transport.shm();
    }
}
