package dev.jrdma;

/** {@link RdmaServingConformance} on the tcp provider, both ends on this host's loopback. */
class RdmaServingTcpTest extends RdmaServingConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }
}
