package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetAddress;

import org.junit.jupiter.api.Test;

/** GID text must be what glibc's inet_ntop (and so ibv_devinfo) prints. */
class GidTextTest {
    private static byte[] raw(String ip) throws Exception {
        return InetAddress.getByName(ip).getAddress();
    }

    private static byte[] v4mapped(int a, int b, int c, int d) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        g[12] = (byte) a;
        g[13] = (byte) b;
        g[14] = (byte) c;
        g[15] = (byte) d;
        return g;
    }

    @Test
    void linkLocalGidCompressesTheLongestZeroRun() throws Exception {
        assertEquals("fe80::5054:ff:fe12:3456", GidText.of(raw("fe80::5054:ff:fe12:3456")));
        assertEquals("fe80::1:0:0:1", GidText.of(raw("fe80:0:0:0:1:0:0:1")), "first of two equal runs");
        assertEquals("1:0:2:3:4:5:6:7", GidText.of(raw("1:0:2:3:4:5:6:7")), "a single zero group stays");
        assertEquals("::", GidText.of(new byte[16]));
    }

    @Test
    void ipv4MappedGidHasADottedTailLikeInetNtop() {
        assertEquals("::ffff:10.77.0.1", GidText.of(v4mapped(10, 77, 0, 1)));
        byte[] compatible = v4mapped(10, 77, 0, 1);
        compatible[10] = 0;
        compatible[11] = 0;
        assertEquals("::10.77.0.1", GidText.of(compatible), "IPv4-compatible: glibc's dotted tail too");
    }
}
