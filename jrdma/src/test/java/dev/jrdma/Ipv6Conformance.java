package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet6Address;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Connections over IPv6: on verbs between the two Soft-RoCE devices' IPv6 RoCE v2 GIDs
 * (fd77::1 and fd77::2 on the VM's veth pair), on tcp and shm over ::1. A message is echoed, and
 * a write, a read and the atomics reach the peer's memory, as over IPv4.
 */
abstract class Ipv6Conformance {
    private static final long T = 30;   // seconds, for every wait

    protected abstract Transport transport();

    @Test
    void echoWriteReadAndAtomicsOverIpv6() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING)) {
            Connection c = p.conn();
            assertInstanceOf(Inet6Address.class, c.remoteAddress().getAddress(), "the peer's address: " + c.remoteAddress());
            assertEquals(p.listener().address().getAddress(), c.remoteAddress().getAddress());
            assertInstanceOf(Inet6Address.class, c.localAddress().getAddress(), "this end's address: " + c.localAddress());
            if (transport().isVerbs()) {
                // Resolved from the client device's own IPv6 GID: the connection left through it, over the veth.
                String client = System.getenv().getOrDefault("JRDMA_VERBS_CLIENT_IP6", System.getenv("JRDMA_VM_IP6_1"));
                assertEquals(java.net.InetAddress.getByName(client), c.localAddress().getAddress(),
                        "the client's end: " + c.localAddress());
            }
            byte[] data = new byte[3000];
            new Random(6).nextBytes(data);
            LocalRegion buf = p.client().allocate(4096);
            buf.segment().copyFrom(MemorySegment.ofArray(data));
            CompletableFuture<Message> reply = c.receive();
            c.send(buf.slice(0, 3000)).get(T, TimeUnit.SECONDS);
            try (Message m = reply.get(T, TimeUnit.SECONDS)) {
                assertArrayEquals(data, m.data().toArray(ValueLayout.JAVA_BYTE));
            }
            RemoteRegion remote = p.remote();
            c.write(buf.slice(0, 3000), remote.slice(0, 3000)).get(T, TimeUnit.SECONDS);
            assertArrayEquals(data, p.exposed().segment().asSlice(0, 3000).toArray(ValueLayout.JAVA_BYTE));
            LocalRegion into = p.client().allocate(3000);
            c.read(remote.slice(0, 3000), into).get(T, TimeUnit.SECONDS);
            assertArrayEquals(data, into.segment().toArray(ValueLayout.JAVA_BYTE));
            RemoteRegion word = remote.slice(8000, 8);
            p.exposed().segment().set(ValueLayout.JAVA_LONG, 8000, 41L);
            assertEquals(41L, c.fetchAndAdd(word, 1).get(T, TimeUnit.SECONDS));
            assertEquals(42L, c.compareAndSwap(word, 42, 7).get(T, TimeUnit.SECONDS));
            assertEquals(7L, p.exposed().segment().get(ValueLayout.JAVA_LONG, 8000));
        }
    }
}
