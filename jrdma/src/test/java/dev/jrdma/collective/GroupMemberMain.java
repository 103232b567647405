package dev.jrdma.collective;

import dev.jrdma.Rdma;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * A group member in a process of its own, for {@link PeerGroupConformance} to kill and restart:
 * joins as {@code rank} over {@code provider} (device {@code device}, "-" for the default) with
 * a rejoin time-out of {@link #REJOIN}, then, by {@code mode}:
 * <ul>
 * <li>{@code wait}: takes part in one barrier, prints "ready" and then waits (at most 120 s)
 *     without calling the next collective, so the other members wait for it in theirs;
 * <li>{@code rejoin}: (the restarted member) takes part in an all-gather of {@link #BLOCK}-byte
 *     blocks, each member's marked with {@link PeerGroupConformance#mark}, checks every byte,
 *     takes part in a barrier, and prints "ok" (or "bad: " and what was wrong).
 * </ul>
 *
 * <pre>GroupMemberMain provider device rank mode host:port...</pre>
 */
public final class GroupMemberMain {
    static final java.time.Duration REJOIN = java.time.Duration.ofSeconds(240);
    static final int BLOCK = 4096;

    private GroupMemberMain() {
    }

    /** The config of every member of the rejoin tests: the emulated VM restarts a JVM in tens of seconds. */
    static GroupConfig config() {
        return GroupConfig.defaults().withRejoinTimeout(REJOIN).withCollectiveTimeout(java.time.Duration.ofSeconds(180))
                .withJoinTimeout(java.time.Duration.ofSeconds(180));
    }

    public static void main(String[] args) throws Exception {
        Rdma.Builder b = Rdma.builder().provider(args[0]);
        if (!args[1].equals("-")) {
            b.device(args[1]);
        }
        int rank = Integer.parseInt(args[2]);
        String mode = args[3];
        List<InetSocketAddress> members = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            int colon = args[i].lastIndexOf(':');
            members.add(new InetSocketAddress(args[i].substring(0, colon), Integer.parseInt(args[i].substring(colon + 1))));
        }
        try (Rdma rdma = b.build(); PeerGroup g = PeerGroup.join(rdma, members, rank, config())) {
            if (mode.equals("wait")) {
                g.barrierSync();
                System.out.println("ready");
                System.out.flush();
                Thread.sleep(120_000);
                return;
            }
            System.out.println("joined");
            System.out.flush();
            int n = members.size();
            try (dev.jrdma.LocalRegion send = rdma.allocate(BLOCK); dev.jrdma.LocalRegion recv = rdma.allocate((long) n * BLOCK)) {
                for (int i = 0; i < BLOCK; i++) {
                    send.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, PeerGroupConformance.mark(rank, 0, i));
                }
                g.allGatherSync(send, recv, BLOCK);
                String bad = null;
                for (int from = 0; from < n && bad == null; from++) {
                    for (int i = 0; i < BLOCK; i++) {
                        if (recv.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, (long) from * BLOCK + i)
                                != PeerGroupConformance.mark(from, 0, i)) {
                            bad = "byte " + i + " of rank " + from + "'s block";
                            break;
                        }
                    }
                }
                g.barrierSync();
                System.out.println(bad == null ? "ok" : "bad: " + bad);
                System.out.flush();
            }
        }
    }
}
