package dev.jrdma.engine.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/** The accept policy's checks, in their order, on a clock of its own. */
class AcceptPolicyTest {
    private static final byte[] TOKEN = "secret".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NONE = new byte[0];
    private final AtomicLong now = new AtomicLong();
    private final InetSocketAddress client = new InetSocketAddress("192.0.2.10", 40000);

    private AcceptPolicy policy(int max, int perSource) {
        return new AcceptPolicy(new SourcePenalties(4, 16, 100_000_000L, 10_000_000_000L, 60_000_000_000L, 64, now::get),
                max, perSource);
    }

    @Test
    void aWaitingSourceIsRefusedBeforeItsTokenIsLookedAt() {
        AcceptPolicy p = policy(100, 100);
        for (int i = 0; i < 5; i++) {
            assertEquals("authentication failed: the auth token does not match the server's",
                    p.refusal(client, TOKEN, "wrong".getBytes(StandardCharsets.US_ASCII), 0, s -> 0));
        }
        String r = p.refusal(client, TOKEN, TOKEN, 0, s -> 0);
        assertEquals("too many failed attempts from this address: retry in 101 ms", r, "even the right token waits");
        assertEquals(5, p.penalties().authFailures(), "the refused one was not counted");
        now.addAndGet(100_000_000L);
        assertNull(p.refusal(client, TOKEN, TOKEN, 0, s -> 0), "the right token once the wait is over");
    }

    @Test
    void connectionLimitsComeAfterTheToken() {
        AtomicInteger asked = new AtomicInteger();
        AcceptPolicy p = policy(4, 2);
        assertTrue(p.refusal(client, TOKEN, NONE, 4, s -> 0).startsWith("authentication failed"));
        assertEquals("too many connections: the server holds 4", p.refusal(client, NONE, NONE, 4, s -> 0));
        assertEquals("too many connections from this address: the server takes 2",
                p.refusal(client, NONE, NONE, 3, s -> { asked.incrementAndGet(); return 2; }));
        assertNull(p.refusal(client, NONE, NONE, 3, s -> 1));
        AcceptPolicy noPerSource = policy(4, 4);
        assertNull(noPerSource.refusal(client, NONE, NONE, 3, s -> { asked.incrementAndGet(); return 3; }));
        assertEquals(1, asked.get(), "the count by source is asked for only when its limit applies");
    }

    @Test
    void offPenaltiesAndAnUnknownAddressLookAtEveryRequest() {
        AcceptPolicy off = new AcceptPolicy(null, 10, 10);
        for (int i = 0; i < 50; i++) {
            assertTrue(off.refusal(client, TOKEN, NONE, 0, s -> 0).startsWith("authentication failed"));
        }
        off.offended(client);
        AcceptPolicy on = policy(10, 1);
        for (int i = 0; i < 50; i++) {
            assertTrue(on.refusal(null, TOKEN, NONE, 0, s -> 0).startsWith("authentication failed"));
        }
        assertNull(on.refusal(null, NONE, NONE, 5, s -> 9), "no address: no per-source limit");
    }

    @Test
    void offencesOfEstablishedConnectionsCountAgainstTheSource() {
        AcceptPolicy p = policy(10, 10);
        for (int i = 0; i < 17; i++) {
            p.offended(client);
        }
        assertTrue(p.refusal(client, NONE, NONE, 0, s -> 0).startsWith("too many failed attempts from this address"));
        p.offended(null);   // nothing to hold it against
    }
}
