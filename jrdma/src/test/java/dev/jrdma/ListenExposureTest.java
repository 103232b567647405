package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.junit.jupiter.api.Test;

/** Safe defaults: a listener other hosts can reach, with no auth token, is warned of (no traffic is made here). */
class ListenExposureTest {
    private static final ConnectionConfig NO_TOKEN = ConnectionConfig.defaults();
    private static final ConnectionConfig TOKEN = ConnectionConfig.builder().authToken(new byte[] {1, 2, 3, 4}).build();

    @Test
    void aReachableListenerWithoutATokenIsWarnedOf() throws Exception {
        InetSocketAddress wildcard = new InetSocketAddress(InetAddress.getByName("0.0.0.0"), 7471);
        InetSocketAddress lan = new InetSocketAddress(InetAddress.getByName("10.1.2.3"), 7471);
        InetSocketAddress v6 = new InetSocketAddress(InetAddress.getByName("::"), 7471);
        for (InetSocketAddress a : new InetSocketAddress[] {wildcard, lan, v6}) {
            String w = ControlSteps.exposureWarning(a, NO_TOKEN);
            assertNotNull(w, String.valueOf(a));
            assertTrue(w.contains("without an auth token") && w.contains("in clear") && w.contains(a.toString()), w);
            assertNull(ControlSteps.exposureWarning(a, TOKEN), "with a token: " + a);
        }
    }

    @Test
    void loopbackIsNotWarnedOf() throws Exception {
        assertNull(ControlSteps.exposureWarning(new InetSocketAddress(InetAddress.getLoopbackAddress(), 7471), NO_TOKEN));
        assertNull(ControlSteps.exposureWarning(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 7471), NO_TOKEN));
        assertNull(ControlSteps.exposureWarning(new InetSocketAddress(InetAddress.getByName("::1"), 7471), NO_TOKEN));
    }
}
