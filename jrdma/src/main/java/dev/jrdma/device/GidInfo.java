package dev.jrdma.device;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/**
 * One valid entry of a port's GID table, as {@code ibv_query_gid_ex} reports it. On RoCE a GID
 * stands for an IP address of the port's network interface ({@link #ipAddress()}); rdma_cm,
 * and therefore jrdma, uses the RoCE v2 ones.
 *
 * @param index       the index in the GID table
 * @param gid         the 16 bytes of the GID (the accessor returns a copy)
 * @param type        {@code IBV_GID_TYPE_*}: IB, RoCE v1 or RoCE v2; {@link #typeName()} says it in words
 * @param ndevIfindex the interface index of the network device the GID belongs to (RoCE), 0 otherwise
 */
public record GidInfo(int index, byte[] gid, int type, int ndevIfindex) {
    /** {@code IBV_GID_TYPE_*}. */
    public static final int TYPE_IB = 0, TYPE_ROCE_V1 = 1, TYPE_ROCE_V2 = 2;

    /** Checks the length and copies the bytes: a GidInfo does not change after it was read. */
    public GidInfo {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
        }
        gid = gid.clone();
    }

    /** {@return a copy of the 16 bytes of the GID} */
    @Override
    public byte[] gid() {
        return gid.clone();
    }

    /** {@return whether this is a RoCE v2 GID: the kind rdma_cm connects over} */
    public boolean roceV2() {
        return type == TYPE_ROCE_V2;
    }

    /**
     * {@link #type()} as {@code ibv_devinfo} prints it ("IB", "RoCE v1", "RoCE v2").
     *
     * @return "IB", "RoCE v1", "RoCE v2", or "type N" for another
     */
    public String typeName() {
        return switch (type) {
            case TYPE_IB -> "IB";
            case TYPE_ROCE_V1 -> "RoCE v1";
            case TYPE_ROCE_V2 -> "RoCE v2";
            default -> "type " + type;
        };
    }

    /**
     * {@return the IP address this GID stands for (RoCE): IPv4 when IPv4-mapped, else IPv6; null for the
     * all-zero GID}
     */
    public InetAddress ipAddress() {
        return ipAddress(gid);
    }

    /**
     * {@return whether the GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d), as RoCE v2 GIDs of IPv4
     * addresses are}
     */
    public boolean ipv4Mapped() {
        return ipv4Mapped(gid);
    }

    /** {@return the GID as ibv_devinfo prints it: eight colon-separated groups of four hex digits} */
    public String text() {
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 16; i += 2) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(String.format("%02x%02x", gid[i], gid[i + 1]));
        }
        return sb.toString();
    }

    /**
     * {@link #ipAddress()} of the 16 raw bytes of a GID.
     *
     * @param gid the 16 bytes of a GID
     * @return the address, or null for the all-zero GID
     */
    public static InetAddress ipAddress(byte[] gid) {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
        }
        boolean zero = true;
        for (byte b : gid) {
            zero &= b == 0;
        }
        if (zero) {
            return null;
        }
        try {
            return InetAddress.getByAddress(ipv4Mapped(gid) ? Arrays.copyOfRange(gid, 12, 16) : gid);
        } catch (UnknownHostException e) {
            throw new IllegalStateException("16 bytes are an IPv6 address", e);
        }
    }

    private static boolean ipv4Mapped(byte[] gid) {
        for (int i = 0; i < 12; i++) {
            if (gid[i] != (i < 10 ? 0 : (byte) 0xff)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GidInfo g && index == g.index && type == g.type && ndevIfindex == g.ndevIfindex
                && Arrays.equals(gid, g.gid);
    }

    @Override
    public int hashCode() {
        return (31 * (31 * index + type) + ndevIfindex) * 31 + Arrays.hashCode(gid);
    }

    @Override
    public String toString() {
        return "GidInfo[index=" + index + ", gid=" + text() + ", type=" + typeName() + ", ndevIfindex=" + ndevIfindex + "]";
    }
}
