package dev.jrdma.perf;

import dev.jrdma.Rdma;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;

import java.net.InetAddress;
import java.util.List;

/**
 * The IP address behind a GID: what {@code -x} means for {@code jrdma perf}. perftest's
 * {@code -x} picks the GID of the QP's address vector; with rdma_cm the GID follows from the
 * IP address a connection uses (and RoCE v2), so jrdma perf turns the index into that address:
 * the server listens on it, and {@code --loopback} on verbs connects to it.
 */
final class GidAddresses {
    private GidAddresses() {
    }

    /** The address of GID {@code index} of {@code device} (null: the first device), port 1. */
    static InetAddress of(String device, int index) {
        DeviceInfo d = device(device);
        PortInfo p = d.ports().get(0);
        for (GidInfo g : p.gids()) {
            if (g.index() == index && g.ipAddress() != null) {
                return g.ipAddress();
            }
        }
        throw new IllegalArgumentException("-x " + index + ": " + d.name() + " port 1 has no valid GID at index " + index
                + " (valid: " + p.gids().stream().map(g -> g.index() + " " + describe(g)).toList() + ")");
    }

    /** The first RoCE v2 IPv4 GID's address of {@code device}, port 1: what --loopback on verbs connects to. */
    static InetAddress firstIpv4(String device) {
        DeviceInfo d = device(device);
        PortInfo p = d.ports().get(0);
        for (GidInfo g : p.gids()) {
            if (g.roceV2() && g.ipv4Mapped()) {
                return g.ipAddress();
            }
        }
        throw new IllegalArgumentException(d.name() + " port 1 has no RoCE v2 IPv4 GID to run --loopback on (GIDs: "
                + p.gids().stream().map(g -> g.index() + " " + describe(g)).toList()
                + "); give the address with --bind, or the GID with -x");
    }

    private static DeviceInfo device(String name) {
        List<DeviceInfo> all = Rdma.devices();
        for (DeviceInfo d : all) {
            if (name == null || name.equals(d.name())) {
                if (d.ports().isEmpty()) {
                    throw new IllegalArgumentException(d.name() + " has no port");
                }
                return d;
            }
        }
        throw new IllegalArgumentException(name == null ? "no RDMA device (ibv_get_device_list lists none)"
                : "no RDMA device named '" + name + "' (there are " + all.stream().map(DeviceInfo::name).toList() + ")");
    }

    private static String describe(GidInfo g) {
        InetAddress a = g.ipAddress();
        return (a == null ? g.text() : a.getHostAddress()) + " (" + g.typeName() + ")";
    }
}
