package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.imm;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionConfig;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 45's finding 6 on real verbs: the group's own checks (the inbox budget, the secret's
 * proofs in rdma_cm's private data) hold on rxe as on tcp and shm ({@link PeerGroupHostileMemberTest}
 * has the attacks at full size there). Members on three devices of the VM's group, the hostile
 * process's Rdma on a device of its own or, where the group has no secret and so takes a rank
 * only from its member's host, on the device of the member it claims to be.
 */
@Tag("verbs")
class PeerGroupHostileMemberVerbsTest {
    private static final long T = 60;
    private static int nextPort = 9200 + (int) (ProcessHandle.current().pid() % 100) * 4;
    private final List<AutoCloseable> open = new ArrayList<>();
    private final List<String> devices = List.of(PeerGroupVerbsTest.env("JRDMA_VM_GROUP_DEVS").split(","));
    private final List<String> ips = List.of(PeerGroupVerbsTest.env("JRDMA_VM_GROUP_IPS").split(","));

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private Rdma rdma(int device) {
        Rdma r = Rdma.builder().provider("verbs").device(devices.get(device)).build();
        open.add(r);
        return r;
    }

    private PeerGroup kept(CompletableFuture<PeerGroup> f) throws Exception {
        PeerGroup g = f.get(T, TimeUnit.SECONDS);
        open.add(g);
        return g;
    }

    /** Three members, rank r at the address of device r. */
    private List<InetSocketAddress> members() {
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        int port;
        synchronized (PeerGroupHostileMemberVerbsTest.class) {
            port = nextPort;
            nextPort += 3;
        }
        List<InetSocketAddress> m = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            m.add(new InetSocketAddress(ips.get(r), port + r));
        }
        return m;
    }

    @Test
    void aFloodOfSmallMessagesIsRefusedAtTheInboxBudgetAndTheRealMemberJoinsAfter() throws Exception {
        List<InetSocketAddress> members = members();
        GroupConfig config = GroupConfig.defaults().withRejoinTimeout(Duration.ofSeconds(T))
                .withCollectiveTimeout(Duration.ofSeconds(T)).withInboxLimits(256, 1 << 20);
        CompletableFuture<PeerGroup> j0 = PeerGroup.joinAsync(rdma(0), members, 0, config),
                j1 = PeerGroup.joinAsync(rdma(1), members, 1, config);
        Rdma hostile = Rdma.builder().provider("verbs").device(devices.get(2)).build();   // rank 2's host: no secret to prove
        open.add(hostile);
        Connection to0 = PeerGroupHostileMemberTest.claim(hostile, members, 2, 0, config.connection());
        PeerGroupHostileMemberTest.claim(hostile, members, 2, 1, config.connection());
        PeerGroup g0 = kept(j0), g1 = kept(j1);
        CompletableFuture<Void> b0 = g0.barrier(), b1 = g1.barrier();   // both wait for rank 2's BARRIER #1
        int sent = 0, ok = 0;
        long t0 = System.nanoTime();
        try (LocalRegion buf = hostile.allocate(40)) {   // a READY as an honest member sends it: a region descriptor
            ArrayDeque<CompletableFuture<Void>> window = new ArrayDeque<>();
            boolean failed = false;
            long deadline = t0 + TimeUnit.SECONDS.toNanos(T);
            while (sent < 2000 && !failed && System.nanoTime() < deadline) {
                try {
                    window.add(to0.sendWithImm(imm(READY, 1000 + sent), buf));   // for collectives far ahead
                    sent++;
                } catch (RuntimeException closed) {
                    break;   // refused: the connection is closed under the flooder
                }
                while (window.size() >= 32 || (sent == 2000 && !window.isEmpty())) {
                    boolean f = window.poll().handle((v, e) -> e != null).get(T, TimeUnit.SECONDS);
                    failed |= f;
                    ok += f ? 0 : 1;
                }
            }
            for (CompletableFuture<Void> f : window) {
                ok += f.handle((v, e) -> e == null ? 1 : 0).get(T, TimeUnit.SECONDS);
            }
        }
        ExecutionException refused = assertThrows(ExecutionException.class, () -> b0.get(T, TimeUnit.SECONDS),
                "rank 0 refused the flooder: " + ok + " of " + sent + " sends taken");
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.println("verbs, 40-byte flood: " + ok + " of " + sent + " sends taken, refused within " + millis + " ms: "
                + refused.getCause().getMessage());
        assertTrue(refused.getCause() instanceof CollectiveException ce && ce.rank() == 2
                && ce.getMessage().contains("inbox budget of 256 messages"), "rank 0's barrier names the flooder: " + refused.getCause());
        // A send completes when rank 0's device has put it in a posted receive, before rank 0 looks at it:
        // past the 256 the inbox takes, at most its posted receives and the flooder's window of 32 more.
        int posted = config.connection().receiveQueueDepth();
        assertTrue(ok <= 256 + posted + 32, ok + " of the flood's " + sent + " sends were taken; the inbox holds 256, and "
                + posted + " receives are posted");
        // The flooder goes; the honest members see rank 2 away, and its real member joins again.
        hostile.close();
        PeerGroupHostileMemberTest.awaitTrue(() -> g0.connection(2) == null && g1.connection(2) == null, T * 1000,
                "ranks 0 and 1 count rank 2 away");
        assertThrows(ExecutionException.class, () -> b1.get(T, TimeUnit.SECONDS), "rank 1's barrier #1 waited for the flooder");
        PeerGroup g2 = kept(PeerGroup.joinAsync(rdma(2), members, 2, config));
        PeerGroupHostileMemberTest.barrierOnAll(List.of(g0, g1, g2));
    }

    @Test
    void withASecretNoClaimFromAnotherHostTakesARankBeforeOrWhileItsMemberJoins() throws Exception {
        byte[] secret = "the group's secret, 32 bytes....".getBytes(StandardCharsets.US_ASCII),
                guess = "not the group's secret, 32 bytes".getBytes(StandardCharsets.US_ASCII);
        GroupConfig config = GroupConfig.defaults().withSecret(secret).withJoinTimeout(Duration.ofSeconds(T));
        List<InetSocketAddress> members = members();
        int gid = GroupWireDescriptor.groupId(members);
        CompletableFuture<PeerGroup> j0 = PeerGroup.joinAsync(rdma(0), members, 0, config),
                j1 = PeerGroup.joinAsync(rdma(1), members, 1, config);
        Rdma hostile = rdma(3);
        // Claims of rank 2 without a token, with a wrong one, and with one made with another secret.
        List<ConnectionConfig> lies = List.of(
                config.connection().toBuilder().privateData(GroupWireDescriptor.hello(gid, 2, 3)).build(),
                config.connection().toBuilder().privateData(GroupWireDescriptor.hello(gid, 2, 3))
                        .authToken(new byte[GroupProof.BYTES]).build(),
                config.connection().toBuilder().privateData(GroupWireDescriptor.hello(gid, 2, 3))
                        .authToken(GroupProof.meshConnect(guess, gid, 3, 0)).build());
        int attempts = 0, established = 0;
        List<String> refusals = new ArrayList<>();
        CompletableFuture<PeerGroup> j2 = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while ((attempts < 24 || j2 == null || !j2.isDone()) && System.nanoTime() < deadline) {
            if (attempts == 12) {
                j2 = PeerGroup.joinAsync(rdma(2), members, 2, config);   // the real member, while the claims go on
            }
            try {
                Connection c = hostile.connectAsync(members.get(attempts % 2), lies.get(attempts % 3)).get(T, TimeUnit.SECONDS);
                established++;
                c.close();
            } catch (ExecutionException e) {
                refusals.add(String.valueOf(e.getCause().getMessage()));
            }
            attempts++;
        }
        assertEquals(0, established, established + " of " + attempts + " claims without the secret were connected");
        assertTrue(j2 != null && attempts >= 24, attempts + " claims made");
        assertTrue(refusals.stream().allMatch(r -> r.contains("auth token") || r.contains("too many failed attempts")),
                "how the claims were refused: " + refusals);
        PeerGroupHostileMemberTest.allGatherChecked(List.of(kept(j0), kept(j1), kept(j2)));
    }
}
