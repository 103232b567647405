package dev.jrdma.collective;

import static dev.jrdma.collective.CollectiveSteps.all;
import static dev.jrdma.collective.CollectiveSteps.copy;
import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.READY;

import dev.jrdma.LocalRegion;

import java.util.concurrent.CompletableFuture;

/**
 * Gather, scatter and all-gather: blocks of {@code blockSize} bytes, member r's at block r of the
 * region that collects them; the sender writes straight into the receiver's region.
 */
final class GatherScatter {
    private GatherScatter() {
    }

    static CompletableFuture<Void> gather(CollectiveSteps s, CollectiveRun run, int root, LocalRegion send, LocalRegion recv,
                                          int blockSize) {
        int rank = s.mesh.rank;
        if (rank == root) {
            copy(send, 0, recv, rank * (long) blockSize, blockSize);
            return all(s.mesh.others().stream().map(p -> s.receiveFrom(run, p, recv, READY, DATA)).toList());
        }
        return s.writeTo(run, root, send.slice(0, blockSize), rank * (long) blockSize, READY, DATA);
    }

    static CompletableFuture<Void> scatter(CollectiveSteps s, CollectiveRun run, int root, LocalRegion send, LocalRegion recv,
                                           int blockSize) {
        int rank = s.mesh.rank;
        if (rank == root) {
            copy(send, rank * (long) blockSize, recv, 0, blockSize);
            return all(s.mesh.others().stream()
                    .map(p -> s.writeTo(run, p, send.slice(p * (long) blockSize, blockSize), 0, READY, DATA)).toList());
        }
        return s.receiveFrom(run, root, recv, READY, DATA);
    }

    static CompletableFuture<Void> allGather(CollectiveSteps s, CollectiveRun run, LocalRegion send, LocalRegion recv, int blockSize) {
        int rank = s.mesh.rank;
        copy(send, 0, recv, rank * (long) blockSize, blockSize);
        return s.exchangeWithAll(run, recv, p -> send.slice(0, blockSize), rank * (long) blockSize);
    }
}
