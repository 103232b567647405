package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.BARRIER;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** Barrier: every member tells every other one that it reached this collective, and waits for theirs. */
final class Barrier {
    private Barrier() {
    }

    static CompletableFuture<Void> run(CollectiveSteps s, CollectiveRun run) {
        List<CompletableFuture<?>> steps = new ArrayList<>();
        for (int p : s.mesh.others()) {
            steps.add(run.track(p, s.mesh.inbox(p).expect(imm(BARRIER, run.seq))));
            steps.add(run.track(p, s.mesh.control(p, imm(BARRIER, run.seq), null)));
        }
        return CollectiveSteps.all(steps);
    }
}
