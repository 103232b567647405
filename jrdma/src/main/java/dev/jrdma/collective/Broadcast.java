package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.READY;

import dev.jrdma.LocalRegion;

import java.util.concurrent.CompletableFuture;

/** Broadcast: root writes its region into every other member's, each member telling root where. */
final class Broadcast {
    private Broadcast() {
    }

    static CompletableFuture<Void> run(CollectiveSteps s, CollectiveRun run, int root, LocalRegion region) {
        if (s.mesh.rank == root) {
            return CollectiveSteps.all(s.mesh.others().stream().map(p -> s.writeTo(run, p, region, 0, READY, DATA)).toList());
        }
        return s.receiveFrom(run, root, region, READY, DATA);
    }
}
