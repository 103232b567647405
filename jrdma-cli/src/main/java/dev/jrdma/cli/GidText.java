package dev.jrdma.cli;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * GIDs written the way ibv_devinfo writes them: inet_ntop(AF_INET6) of the raw GID, so a RoCE v2
 * IPv4-mapped GID reads {@code ::ffff:10.77.0.1} (rdma-core 44, Debian bookworm's, prints every GID
 * that way; only later releases switched IPv4-mapped RoCE v2 GIDs to a bare dotted quad).
 */
final class GidText {
    private GidText() {
    }

    static String of(byte[] gid) {
        return ntop6(gid);
    }

    /** RFC 5952 text, as glibc's inet_ntop prints it (longest run of two or more zero groups as "::"). */
    static String ntop6(byte[] a) {
        int[] g = new int[8];
        for (int i = 0; i < 8; i++) {
            g[i] = ((a[2 * i] & 0xff) << 8) | (a[2 * i + 1] & 0xff);
        }
        int bestStart = -1, bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (g[i] == 0) {
                int j = i;
                while (j < 8 && g[j] == 0) {
                    j++;
                }
                if (j - i > bestLen) {
                    bestStart = i;
                    bestLen = j - i;
                }
                i = j;
            } else {
                i++;
            }
        }
        if (bestLen < 2) {
            bestStart = -1;
        }
        // glibc prints ::ffff:a.b.c.d and ::a.b.c.d (deprecated compatible) with a dotted tail.
        if (bestStart == 0 && (bestLen == 6 || (bestLen == 5 && g[5] == 0xffff))) {
            try {
                InetAddress v4 = InetAddress.getByAddress(java.util.Arrays.copyOfRange(a, 12, 16));
                return (bestLen == 5 ? "::ffff:" : "::") + v4.getHostAddress();
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append(i == 0 ? "::" : ":");
                i += bestLen - 1;
                continue;
            }
            sb.append(Integer.toHexString(g[i]));
            if (i < 7) {
                sb.append(':');
            }
        }
        return sb.toString();
    }
}
