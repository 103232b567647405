package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.SockAddr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * UD at the level of the bindings, on Soft-RoCE: what the datagram API is built on. Unicast
 * through rdma_cm's SIDR (RDMA_PS_UDP: the client's connect asks the server for its QPN and Q_Key,
 * and the ESTABLISHED event carries them with the address handle's attributes), and a multicast
 * group joined through rdma_cm (librdmacm attaches the id's QP), seen by every member on the
 * other device. Each receive starts with the 40-byte GRH.
 */
@Tag("verbs")
class UdVerbsTest {
    private static final int CM_MS = 20_000;
    private static final int GRH = 40;
    private static final int BUF = 1024 + GRH;

    @Test
    void unicastDatagramsBothWaysThroughSidr() {
        try (RcEndpoint listener = new RcEndpoint(); RcEndpoint server = new RcEndpoint();
             RcEndpoint client = new RcEndpoint(); Arena a = Arena.ofConfined()) {
            InetSocketAddress serverAddress = VerbsTestBed.nextServerAddress();
            listener.id = LibRdmacm.createId(listener.channel, RdmaCmId.PS_UDP, a);
            LibRdmacm.bindAddr(listener.id, SockAddr.of(serverAddress, a));
            LibRdmacm.listen(listener.id, 8);

            client.id = LibRdmacm.createId(client.channel, RdmaCmId.PS_UDP, a);
            LibRdmacm.resolveAddr(client.id, SockAddr.of(new InetSocketAddress(VerbsTestBed.clientIp(), 0), a),
                    SockAddr.of(serverAddress, a), CM_MS);
            client.expect(RdmaCmEvent.ADDR_RESOLVED, CM_MS);
            LibRdmacm.resolveRoute(client.id, CM_MS);
            client.expect(RdmaCmEvent.ROUTE_RESOLVED, CM_MS);
            client.qpType = IbvQp.QPT_UD;
            client.createQp();
            assertEquals("RTS", IbvQp.stateName(client.queryState()), "rdma_create_qp brings a UD QP to RTS itself");
            MemorySegment clientRecv = client.register(BUF, IbvMr.ACCESS_LOCAL_WRITE);
            assertEquals(0, client.postRecv(1, clientRecv));
            LibRdmacm.connect(client.id, client.connParam(null));   // SIDR REQ

            RcEndpoint.CmEvent request = listener.expect(RdmaCmEvent.CONNECT_REQUEST, CM_MS);
            server.id = request.id();
            LibRdmacm.migrateId(server.id, server.channel);
            server.qpType = IbvQp.QPT_UD;
            server.createQp();
            MemorySegment serverRecv = server.register(BUF, IbvMr.ACCESS_LOCAL_WRITE);
            assertEquals(0, server.postRecv(2, serverRecv));
            MemorySegment accept = server.connParam(null);
            RdmaConnParam.qpNum(accept, IbvQp.qpNum(server.qp));
            LibRdmacm.accept(server.id, accept);   // SIDR REP: the QPN and Q_Key

            RcEndpoint.CmEvent established = client.expect(RdmaCmEvent.ESTABLISHED, CM_MS);
            assertEquals(IbvQp.qpNum(server.qp), established.udQpn(), "the SIDR reply names the server's QP");
            System.out.printf("[ud] SIDR: server QPN 0x%x, Q_Key 0x%x%n", established.udQpn(), established.udQkey());
            MemorySegment toServer = LibIbverbs.createAh(client.pd, established.udAhAttr());
            MemorySegment toClient = null;
            try {
                byte[] hello = "a datagram from rxe1".getBytes(StandardCharsets.US_ASCII);
                MemorySegment clientSend = client.register(1024, IbvMr.ACCESS_LOCAL_WRITE);
                RcEndpoint.bytes(clientSend).copyFrom(MemorySegment.ofArray(hello));
                assertEquals(0, client.postUdSend(3, clientSend, hello.length, toServer, established.udQpn(), established.udQkey()));
                assertEquals(IbvWc.SUCCESS, client.pollOne(CM_MS).status());
                RcEndpoint.Wc got = server.pollOne(CM_MS);
                assertEquals(IbvWc.SUCCESS, got.status(), got.statusName());
                assertEquals(GRH + hello.length, got.byteLen(), "the GRH comes first");
                assertTrue((got.wcFlags() & IbvWc.WITH_GRH) != 0, "wc_flags has IBV_WC_GRH");
                assertEquals(IbvQp.qpNum(client.qp), got.srcQp(), "src_qp is the client's QP");
                assertArrayEquals(hello, RcEndpoint.bytes(serverRecv).asSlice(GRH, hello.length).toArray(ValueLayout.JAVA_BYTE));
                // The GRH of RoCE v2 over IPv4: the IPv4 header in its last 20 bytes (source at 32..35).
                byte[] grh = RcEndpoint.bytes(serverRecv).asSlice(0, GRH).toArray(ValueLayout.JAVA_BYTE);
                System.out.printf("[ud] GRH: %s%n", java.util.HexFormat.ofDelimiter(" ").formatHex(grh));

                // The reply goes back through an address handle made from the receive.
                toClient = LibIbverbs.createAhFromWc(server.pd, server.lastWc, RcEndpoint.bytes(serverRecv).asSlice(0, GRH), 1);
                byte[] reply = "and one back from rxe0".getBytes(StandardCharsets.US_ASCII);
                MemorySegment serverSend = server.register(1024, IbvMr.ACCESS_LOCAL_WRITE);
                RcEndpoint.bytes(serverSend).copyFrom(MemorySegment.ofArray(reply));
                assertEquals(0, server.postUdSend(4, serverSend, reply.length, toClient, got.srcQp(), established.udQkey()));
                assertEquals(IbvWc.SUCCESS, server.pollOne(CM_MS).status());
                RcEndpoint.Wc back = client.pollOne(CM_MS);
                assertEquals(GRH + reply.length, back.byteLen());
                assertArrayEquals(reply, RcEndpoint.bytes(clientRecv).asSlice(GRH, reply.length).toArray(ValueLayout.JAVA_BYTE));
            } finally {   // before the PD goes with the endpoints
                if (toClient != null) {
                    LibIbverbs.destroyAh(toClient);
                }
                LibIbverbs.destroyAh(toServer);
            }
        }
    }

    @Test
    void multicastGroupOfThreeEndpointsReceivesWhatOneSends() throws Exception {
        InetSocketAddress group = new InetSocketAddress(InetAddress.getByName("239.77.0.1"), 0);
        try (RcEndpoint sender = new RcEndpoint(); RcEndpoint b = new RcEndpoint(); RcEndpoint c = new RcEndpoint();
             Arena a = Arena.ofConfined()) {
            List<RcEndpoint> all = List.of(sender, b, c);
            List<InetAddress> at = List.of(VerbsTestBed.serverIp(), VerbsTestBed.clientIp(), VerbsTestBed.clientIp());
            RcEndpoint.CmEvent senderJoin = null;
            for (int i = 0; i < 3; i++) {
                RcEndpoint e = all.get(i);
                e.id = LibRdmacm.createId(e.channel, RdmaCmId.PS_UDP, a);
                LibRdmacm.bindAddr(e.id, SockAddr.of(new InetSocketAddress(at.get(i), 0), a));
                e.qpType = IbvQp.QPT_UD;
                e.createQp();
                MemorySegment recv = e.register(BUF, IbvMr.ACCESS_LOCAL_WRITE);
                assertEquals(0, e.postRecv(10 + i, recv));
                LibRdmacm.joinMulticast(e.id, SockAddr.of(group, a), MemorySegment.NULL);
                RcEndpoint.CmEvent joined = e.expect(RdmaCmEvent.MULTICAST_JOIN, CM_MS);
                System.out.printf("[ud] member %d on %s joined %s: QPN 0x%x, Q_Key 0x%x%n", i, at.get(i), group.getAddress(),
                        joined.udQpn(), joined.udQkey());
                if (i == 0) {
                    senderJoin = joined;
                }
            }
            MemorySegment toGroup = LibIbverbs.createAh(sender.pd, senderJoin.udAhAttr());
            try {
                byte[] news = "to every member".getBytes(StandardCharsets.US_ASCII);
                MemorySegment send = sender.register(1024, IbvMr.ACCESS_LOCAL_WRITE);
                RcEndpoint.bytes(send).copyFrom(MemorySegment.ofArray(news));
                assertEquals(0, sender.postUdSend(20, send, news.length, toGroup, senderJoin.udQpn(), senderJoin.udQkey()));
                assertEquals(IbvWc.SUCCESS, sender.pollOne(CM_MS).status());
                for (RcEndpoint member : List.of(b, c)) {
                    RcEndpoint.Wc got = member.pollOne(CM_MS);
                    assertEquals(IbvWc.SUCCESS, got.status(), got.statusName());
                    assertEquals(GRH + news.length, got.byteLen());
                    assertEquals(IbvQp.qpNum(sender.qp), got.srcQp());
                }
                System.out.printf("[ud] the sender itself got %d copies of its own multicast%n", sender.drainExtra(500));
            } finally {
                for (RcEndpoint e : all) {
                    LibRdmacm.leaveMulticast(e.id, SockAddr.of(group, a));
                }
                LibIbverbs.destroyAh(toGroup);
            }
        }
    }
}
