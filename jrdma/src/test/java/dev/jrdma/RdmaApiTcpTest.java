package dev.jrdma;

/** {@link RdmaApiConformance} on the tcp provider, both ends on this host's loopback. */
class RdmaApiTcpTest extends RdmaApiConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }
}
