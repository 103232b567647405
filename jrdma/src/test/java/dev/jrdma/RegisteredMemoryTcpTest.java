package dev.jrdma;

/** {@link RegisteredMemoryConformance} on the tcp provider, both ends on this host. */
class RegisteredMemoryTcpTest extends RegisteredMemoryConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }
}
