package dev.jrdma;

/** {@link ReconnectConformance} on the tcp provider, both ends on this host. */
class ReconnectTcpTest extends ReconnectConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }
}
