package dev.jrdma.os;

import static dev.jrdma.os.CLayouts.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/** {@code struct sockaddr_in} / {@code sockaddr_in6}, to and from {@link InetSocketAddress}. */
public final class SockAddr {
    public static final StructLayout IN = struct("sockaddr_in",
            U16.withName("sin_family"),
            BE16.withName("sin_port"),
            BE32.withName("sin_addr"),
            chars(8).withName("sin_zero"));

    public static final StructLayout IN6 = struct("sockaddr_in6",
            U16.withName("sin6_family"),
            BE16.withName("sin6_port"),
            BE32.withName("sin6_flowinfo"),
            chars(16).withName("sin6_addr"),
            U32.withName("sin6_scope_id"));

    public static final short AF_INET = 2, AF_INET6 = 10;

    private SockAddr() {
    }

    /** A native sockaddr for {@code address}; an unresolved host name is refused by name. */
    public static MemorySegment of(InetSocketAddress address, SegmentAllocator allocator) {
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("address " + address + " is unresolved");
        }
        InetAddress ip = address.getAddress();
        if (ip instanceof Inet4Address) {
            MemorySegment sa = allocator.allocate(IN).fill((byte) 0);   // sin_zero; an allocator may reuse memory
            sa.set(U16, offset(IN, "sin_family"), AF_INET);
            sa.set(BE16, offset(IN, "sin_port"), (short) address.getPort());
            MemorySegment.copy(ip.getAddress(), 0, sa, U8, offset(IN, "sin_addr"), 4);
            return sa;
        }
        MemorySegment sa = allocator.allocate(IN6).fill((byte) 0);   // sin6_flowinfo too
        sa.set(U16, offset(IN6, "sin6_family"), AF_INET6);
        sa.set(BE16, offset(IN6, "sin6_port"), (short) address.getPort());
        MemorySegment.copy(ip.getAddress(), 0, sa, U8, offset(IN6, "sin6_addr"), 16);
        sa.set(U32, offset(IN6, "sin6_scope_id"), ((Inet6Address) ip).getScopeId());
        return sa;
    }

    /** The address in a native sockaddr (of either family), or null for an unknown family. */
    public static InetSocketAddress toInet(MemorySegment sockaddr) {
        MemorySegment sa = sockaddr.reinterpret(IN6.byteSize());
        short family = sa.get(U16, 0);
        try {
            if (family == AF_INET) {
                byte[] ip = sa.asSlice(offset(IN, "sin_addr"), 4).toArray(U8);
                return new InetSocketAddress(InetAddress.getByAddress(ip),
                        Short.toUnsignedInt(sa.get(BE16, offset(IN, "sin_port"))));
            }
            if (family == AF_INET6) {
                byte[] ip = sa.asSlice(offset(IN6, "sin6_addr"), 16).toArray(U8);
                return new InetSocketAddress(InetAddress.getByAddress(ip),
                        Short.toUnsignedInt(sa.get(BE16, offset(IN6, "sin6_port"))));
            }
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
        return null;
    }
}
