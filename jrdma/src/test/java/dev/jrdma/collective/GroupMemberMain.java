package dev.jrdma.collective;

import dev.jrdma.Rdma;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * A group member in a process of its own, for {@link PeerGroupConformance} to kill: joins as
 * {@code rank} over {@code provider} (device {@code device}, "-" for the default), takes part
 * in one barrier, prints "ready" and then waits (at most 120 s) without calling the next
 * collective, so the other members wait for it in theirs.
 *
 * <pre>GroupMemberMain provider device rank host:port...</pre>
 */
public final class GroupMemberMain {
    private GroupMemberMain() {
    }

    public static void main(String[] args) throws Exception {
        Rdma.Builder b = Rdma.builder().provider(args[0]);
        if (!args[1].equals("-")) {
            b.device(args[1]);
        }
        int rank = Integer.parseInt(args[2]);
        List<InetSocketAddress> members = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            int colon = args[i].lastIndexOf(':');
            members.add(new InetSocketAddress(args[i].substring(0, colon), Integer.parseInt(args[i].substring(colon + 1))));
        }
        try (Rdma rdma = b.build(); PeerGroup g = PeerGroup.join(rdma, members, rank)) {
            g.barrierSync();
            System.out.println("ready");
            System.out.flush();
            Thread.sleep(120_000);
        }
    }
}
