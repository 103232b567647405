package dev.jrdma.collective;

import static dev.jrdma.collective.CollectiveSteps.all;
import static dev.jrdma.collective.CollectiveSteps.copy;
import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.DATA2;
import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.READY2;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import dev.jrdma.LocalRegion;
import dev.jrdma.RemoteRegion;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * All-to-all: block j of member i's send region lands as block i of member j's receive region.
 * {@link AllToAllAlgorithm#PAIRWISE}: every member writes to every other one at once;
 * {@link AllToAllAlgorithm#SEQUENTIAL}: rdma_lib's, through rank 0.
 */
final class AllToAll {
    private AllToAll() {
    }

    static CompletableFuture<Void> pairwise(CollectiveSteps s, CollectiveRun run, LocalRegion send, LocalRegion recv, int blockSize) {
        int rank = s.mesh.rank;
        copy(send, rank * (long) blockSize, recv, rank * (long) blockSize, blockSize);
        return s.exchangeWithAll(run, recv, p -> send.slice(p * (long) blockSize, blockSize), rank * (long) blockSize);
    }

    /**
     * rdma_lib's all-to-all, through rank 0: every member writes its whole send region into a
     * staging region at rank 0 (row {@code rank}); rank 0 then writes to each member in turn the
     * column meant for it, waiting for each member before the next.
     */
    static CompletableFuture<Void> sequential(CollectiveSteps s, CollectiveRun run, LocalRegion send, LocalRegion recv, int blockSize) {
        int rank = s.mesh.rank, size = s.mesh.size;
        long row = size * (long) blockSize;
        if (rank != 0) {
            // Our row to rank 0, then wait for our column from it.
            CompletableFuture<Void> out = s.writeTo(run, 0, send.slice(0, row), rank * row, READY, DATA);
            CompletableFuture<Void> in = s.receiveFrom(run, 0, recv, READY2, DATA2);
            return all(List.of(out, in));
        }
        LocalRegion staging = s.mesh.rdma.allocateUninitialized(size * row), column = s.mesh.rdma.allocateUninitialized(row);
        CompletableFuture<Void> rows = all(s.mesh.others().stream().map(p -> s.receiveFrom(run, p, staging, READY, DATA)).toList());
        CompletableFuture<Void> served = rows.thenCompose(v -> {
            // Row 0 is ours: it stays in send; our own column comes from the staging rows.
            copy(send, 0, recv, 0, blockSize);
            for (int i = 1; i < size; i++) {
                copy(staging, i * row, recv, i * (long) blockSize, blockSize);
            }
            CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
            for (int p = 1; p < size; p++) {
                int target = p;
                chain = chain.thenCompose(x -> serveColumn(s, run, target, send, staging, column, row, blockSize));
            }
            return chain;
        });
        // Closed when the collective ends, also by failure or time-out (a member that never came).
        run.result.whenComplete((v, e) -> {
            staging.close();
            column.close();
        });
        return served;
    }

    /**
     * Rank 0 of the sequential all-to-all: member {@code p}'s column, gathered into
     * {@code column} and written with one WRITE_WITH_IMM (one work request per member, whatever
     * the group's size: n writes per member would not fit a send queue past its depth).
     */
    private static CompletableFuture<Void> serveColumn(CollectiveSteps s, CollectiveRun run, int p, LocalRegion send,
                                                       LocalRegion staging, LocalRegion column, long row, int blockSize) {
        int size = s.mesh.size;
        return run.track(p, s.mesh.inbox(p).expect(imm(READY2, run.seq))).thenCompose(d -> {
            RemoteRegion target = CollectiveSteps.remote(run, p, d, 0, size * (long) blockSize);
            copy(send, p * (long) blockSize, column, 0, blockSize);
            for (int i = 1; i < size; i++) {
                copy(staging, i * row + p * (long) blockSize, column, i * (long) blockSize, blockSize);
            }
            return run.track(p, s.mesh.peer(p).writeWithImm(column, target.slice(0, column.length()), imm(DATA2, run.seq)));
        });
    }
}
