package dev.jrdma.collective;

/** {@link PeerGroupConformance} on tcp, every member on this host's loopback. */
class PeerGroupTcpTest extends PeerGroupConformance {
    @Override
    protected String provider() {
        return "tcp";
    }
}
