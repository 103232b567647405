package dev.jrdma;

/** {@link Ipv6Conformance} on tcp. */
class Ipv6TcpTest extends Ipv6Conformance {
    @Override
    protected Transport transport() {
        return Transport.tcpOverIpv6();
    }
}
