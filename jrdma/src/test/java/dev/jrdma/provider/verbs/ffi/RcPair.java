package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.os.SockAddr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

/**
 * A connected RC queue-pair pair through rdma_cm, in one thread: the server listens on the
 * first device's address, the client resolves it from the second device's address, and each
 * side's events are awaited in turn. Private data travels both ways and is checked.
 */
final class RcPair implements AutoCloseable {
    static final int CM_TIMEOUT_MS = 20_000;

    final RcEndpoint listener = new RcEndpoint();
    final RcEndpoint server = new RcEndpoint();
    final RcEndpoint client = new RcEndpoint();

    private RcPair() {
    }

    static RcPair connect() {
        return connect(false, false);
    }

    /** A pair whose client CQ has a completion channel and/or whose server receives from an SRQ. */
    static RcPair connect(boolean clientCompChannel, boolean serverSrq) {
        RcPair pair = new RcPair();
        pair.client.useCompChannel = clientCompChannel;
        pair.server.useSrq = serverSrq;
        try {
            pair.establish();
            return pair;
        } catch (Throwable t) {
            pair.close();
            throw t;
        }
    }

    private void establish() {
        InetSocketAddress serverAddress = VerbsTestBed.nextServerAddress();
        try (Arena a = Arena.ofConfined()) {
            listener.id = LibRdmacm.createId(listener.channel, RdmaCmId.PS_TCP, a);
            LibRdmacm.bindAddr(listener.id, SockAddr.of(serverAddress, a));
            LibRdmacm.listen(listener.id, 8);

            client.id = LibRdmacm.createId(client.channel, RdmaCmId.PS_TCP, a);
            LibRdmacm.resolveAddr(client.id, SockAddr.of(new InetSocketAddress(VerbsTestBed.clientIp(), 0), a),
                    SockAddr.of(serverAddress, a), CM_TIMEOUT_MS);
        }
        client.expect(RdmaCmEvent.ADDR_RESOLVED, CM_TIMEOUT_MS);
        LibRdmacm.resolveRoute(client.id, CM_TIMEOUT_MS);
        client.expect(RdmaCmEvent.ROUTE_RESOLVED, CM_TIMEOUT_MS);
        client.createQp();
        byte[] hello = "jrdma-client".getBytes();
        LibRdmacm.connect(client.id, client.connParam(hello));

        RcEndpoint.CmEvent request = listener.expect(RdmaCmEvent.CONNECT_REQUEST, CM_TIMEOUT_MS);
        // rdma_cm pads private data to the transport's size: compare the prefix we sent.
        assertArrayEquals(hello, java.util.Arrays.copyOf(request.privateData(), hello.length), "connect private data");
        server.id = request.id();
        LibRdmacm.migrateId(server.id, server.channel);   // the accepted id gets its own channel
        server.createQp();
        byte[] welcome = "jrdma-server".getBytes();
        LibRdmacm.accept(server.id, server.connParam(welcome));

        RcEndpoint.CmEvent established = client.expect(RdmaCmEvent.ESTABLISHED, CM_TIMEOUT_MS);
        assertArrayEquals(welcome, java.util.Arrays.copyOf(established.privateData(), welcome.length),
                "accept private data");
        server.expect(RdmaCmEvent.ESTABLISHED, CM_TIMEOUT_MS);
        assertEquals("RTS", IbvQp.stateName(client.queryState()), "client QP state");
        assertEquals("RTS", IbvQp.stateName(server.queryState()), "server QP state");
    }

    /**
     * Disconnects and frees everything. rdma_cm's disconnect is a handshake: the client's
     * rdma_disconnect sends a DREQ, the server sees DISCONNECTED and must call rdma_disconnect
     * itself, which answers with the DREP that gives the client its DISCONNECTED. (Without the
     * second call the client only hears of it when its DREQ times out, many seconds later.)
     */
    @Override
    public void close() {
        try {
            if (client.qp != null && server.qp != null) {
                LibRdmacm.disconnect(client.id);
                server.expect(RdmaCmEvent.DISCONNECTED, CM_TIMEOUT_MS);
                LibRdmacm.disconnect(server.id);
                client.expect(RdmaCmEvent.DISCONNECTED, CM_TIMEOUT_MS);
            }
        } finally {
            client.close();
            server.close();
            listener.close();
        }
    }

    static MemorySegment bytesOf(MemorySegment mr) {
        return RcEndpoint.bytes(mr);
    }
}
