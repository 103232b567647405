package dev.jrdma;

/** {@link RdmaOperationsConformance} on the tcp provider, both ends on this host's loopback. */
class RdmaOperationsTcpTest extends RdmaOperationsConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }
}
