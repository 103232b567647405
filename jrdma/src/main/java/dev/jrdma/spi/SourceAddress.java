package dev.jrdma.spi;

import java.net.Inet4Address;
import java.net.InetAddress;

/**
 * A peer's source as the budgets per source count it: an IPv4 address, or an IPv6 address's /64
 * (one host, or one customer of a provider, holds a whole /64, so counting IPv6 peers by address
 * would give one of them 2^64 sources). Equal for two addresses of one source; a map key.
 *
 * @param high the /64 of an IPv6 address; -1 for IPv4
 * @param low the IPv4 address; 0 for IPv6
 */
public record SourceAddress(long high, long low) {
    /** {@return the source {@code a} counts as} */
    public static SourceAddress of(InetAddress a) {
        byte[] b = a.getAddress();
        if (a instanceof Inet4Address) {
            return new SourceAddress(-1, ((b[0] & 0xFFL) << 24) | ((b[1] & 0xFFL) << 16) | ((b[2] & 0xFFL) << 8) | (b[3] & 0xFFL));
        }
        long high = 0;
        for (int i = 0; i < 8; i++) {
            high = (high << 8) | (b[i] & 0xFF);
        }
        return new SourceAddress(high, 0);
    }
}
