package dev.jrdma;

/** {@link SharedReceiveQueueConformance} on tcp. */
class SharedReceiveQueueTcpTest extends SharedReceiveQueueConformance {
    @Override
    protected Transport transport() {
        return Transport.tcp();
    }

    @Override
    protected int fanInConnections() {
        return 256;
    }
}
