package dev.jrdma.provider.verbs;

import dev.jrdma.device.PortInfo;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.os.SockAddr;
import dev.jrdma.provider.verbs.ffi.IbvPathData;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.provider.verbs.ffi.RdmaCmId;
import dev.jrdma.spi.QueuePairSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetSocketAddress;

/**
 * The path of an outgoing connection whose config chooses its service level or flow label, given
 * to rdma_cm ({@code RDMA_OPTION_IB_PATH}) in place of {@code rdma_resolve_route}. rdma_cm has no
 * option for either: on RoCE it derives the service level from the traffic class and the flow
 * label from the ports. A path given to it is used as a resolved one is: the connection request
 * carries it (so the accepting side's QP takes it), and both QPs' address vectors are made from
 * it. The record is the one Linux's {@code cma_resolve_iboe_route} makes (6.1), with the
 * config's values where it has them: GIDs from the resolved IP addresses, pkey 0xFFFF, the port's
 * active MTU and rate, hop limit {@value #HOP_LIMIT} (Linux's default TTL, which rdma_cm would
 * take from the route), traffic class the config's or 0 (rdma_cm's per-port default unless an
 * administrator changed it in configfs), service level the config's or 0 (what rdma_cm derives
 * without a VLAN device), flow label the config's or rdma_cm's hash of the two ports (which
 * rdma_cm uses on RoCE v2; on a RoCE v1 port it would leave 0), packet life time {@value
 * #PACKET_LIFE_TIME} as rdma_cm's own path has it with jrdma (which sets a config's ack timeout
 * on the id after the route, so the timeout applies to the QP and not to the path: a chosen
 * path changes nothing else of the connection, the request's timeouts included).
 *
 * <p>Only on RoCE: an InfiniBand port's path comes from its subnet manager (LIDs, the SL it
 * maps), which jrdma does not second-guess.
 */
final class ChosenPath {
    /** The GRH hop limit (RoCE v2: the IP TTL); Linux's default, {@code net.ipv4.ip_default_ttl}. */
    static final int HOP_LIMIT = 64;
    /** {@code CMA_IBOE_PACKET_LIFETIME} (Linux 6.1): rdma_cm's packet life time on RoCE. */
    static final int PACKET_LIFE_TIME = 18;

    private ChosenPath() {
    }

    /**
     * Gives rdma_cm the path of {@code id}, whose address is resolved; ROUTE_RESOLVED follows.
     *
     * @throws UnsupportedCapabilityException the id's port is not RoCE
     */
    static void give(MemorySegment id, QueuePairSpec spec, VerbsDevice device) {
        int port = RdmaCmId.portNum(id);
        PortInfo info = device.info().ports().get(port - 1);
        if (!info.ethernet()) {
            throw new UnsupportedCapabilityException("serviceLevel/flowLabel", device.name(), "port " + port
                    + " is not RoCE: an InfiniBand path, with its service level, comes from the subnet manager");
        }
        InetSocketAddress src = SockAddr.toInet(RdmaCmId.srcAddr(id));
        InetSocketAddress dst = SockAddr.toInet(RdmaCmId.dstAddr(id));
        int flowLabel = spec.flowLabel() >= 0 ? spec.flowLabel() : defaultFlowLabel(src.getPort(), dst.getPort());
        try (Arena a = Arena.ofConfined()) {
            LibRdmacm.setIbPath(id, IbvPathData.of(gid(src), gid(dst), flowLabel, HOP_LIMIT,
                    Math.max(0, spec.trafficClass()), Math.max(0, spec.serviceLevel()), info.activeMtu(), PACKET_LIFE_TIME, a));
        }
    }

    /** rdma_cm's flow label of a RoCE v2 connection ({@code cma_get_roce_udp_flow_label}). */
    static int defaultFlowLabel(int srcPort, int dstPort) {
        return (srcPort * 31 + dstPort) & 0xFFFFF;
    }

    /** The RoCE GID of an IP address ({@code rdma_ip2gid}): IPv4 mapped into IPv6, IPv6 as it is. */
    static byte[] gid(InetSocketAddress address) {
        byte[] ip = address.getAddress().getAddress();
        if (!(address.getAddress() instanceof Inet4Address)) {
            return ip;
        }
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xFF;
        gid[11] = (byte) 0xFF;
        System.arraycopy(ip, 0, gid, 12, 4);
        return gid;
    }
}
