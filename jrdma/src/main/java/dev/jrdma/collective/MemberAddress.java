package dev.jrdma.collective;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;

/**
 * What a group without a secret checks of a connection that claims a member's rank: that it
 * comes from that member's host, as the member list names it. A member listed at an address of
 * another host must connect from that address; a member listed at an address of this host (the
 * loopback, or one of this host's interfaces) may connect from any address of this host, since
 * the kernel picks the source of a local connection (and any process here could claim it
 * anyway: on one host only a secret tells members apart). An IPv4-mapped IPv6 address counts as
 * its IPv4 address.
 */
final class MemberAddress {
    private MemberAddress() {
    }

    /** Whether a connection from {@code remote} may claim the rank of the member listed at {@code member}. */
    static boolean mayClaim(InetAddress remote, InetAddress member) {
        InetAddress from = plain(remote), listed = plain(member);
        if (from.equals(listed) || listed.isAnyLocalAddress()) {
            return true;   // a member listed at the wildcard: the list does not say where it is
        }
        return isThisHost(listed) && isThisHost(from);
    }

    /** Whether {@code a} is an address of this host: the loopback, or one of its interfaces'. */
    static boolean isThisHost(InetAddress a) {
        if (a.isLoopbackAddress() || a.isAnyLocalAddress()) {
            return true;
        }
        try {
            return NetworkInterface.getByInetAddress(a) != null;
        } catch (SocketException e) {
            return false;   // cannot tell: not counted as this host's, so only the exact address is taken
        }
    }

    /** {@code a}, an IPv4-mapped IPv6 address as its IPv4 one. */
    private static InetAddress plain(InetAddress a) {
        if (a instanceof Inet6Address) {
            byte[] b = a.getAddress();
            boolean mapped = b[10] == (byte) 0xFF && b[11] == (byte) 0xFF;
            for (int i = 0; i < 10 && mapped; i++) {
                mapped = b[i] == 0;
            }
            if (mapped) {
                try {
                    return InetAddress.getByAddress(new byte[] {b[12], b[13], b[14], b[15]});
                } catch (UnknownHostException e) {
                    throw new IllegalStateException(e);   // four bytes are always an address
                }
            }
        }
        return a;
    }
}
