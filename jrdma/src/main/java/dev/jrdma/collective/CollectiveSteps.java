package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import dev.jrdma.Access;
import dev.jrdma.LocalRegion;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

/**
 * The steps every collective is made of, on one member's {@link GroupMesh}: tell a member where to
 * write and wait for its arrival signal, wait for a member's region and write into it with the
 * arrival signal (one WRITE_WITH_IMM: the data lands in place, nothing is copied on the receiver).
 * Each step is tracked by the {@link CollectiveRun}, so that a member that fails or stalls is named.
 */
final class CollectiveSteps {
    final GroupMesh mesh;

    CollectiveSteps(GroupMesh mesh) {
        this.mesh = mesh;
    }

    /** Tells member {@code p} where to write ({@code recv}), and waits for its arrival signal. */
    CompletableFuture<Void> receiveFrom(CollectiveRun run, int p, LocalRegion recv, int ready, int data) {
        byte[] d = recv.toRemote(Access.REMOTE_WRITE).toDescriptor();
        CompletableFuture<Void> told = run.track(p, mesh.control(p, imm(ready, run.seq), d));
        CompletableFuture<byte[]> came = run.track(p, mesh.inbox(p).expect(imm(data, run.seq)));
        return told.thenCombine(came, (a, b) -> null);
    }

    /** Waits for member {@code p}'s region, then writes {@code src} at {@code offset} of it with the arrival signal. */
    CompletableFuture<Void> writeTo(CollectiveRun run, int p, LocalRegion src, long offset, int ready, int data) {
        return run.track(p, mesh.inbox(p).expect(imm(ready, run.seq))).thenCompose(d -> {
            RemoteRegion target = remote(run, p, d, offset, src.length());
            return run.track(p, mesh.peer(p).writeWithImm(src, target.slice(offset, src.length()), imm(data, run.seq)));
        });
    }

    /** Member {@code p}'s region from its READY, checked to hold {@code length} bytes at {@code offset}. */
    static RemoteRegion remote(CollectiveRun run, int p, byte[] descriptor, long offset, long length) {
        RemoteRegion r;
        try {
            r = RemoteRegion.fromDescriptor(descriptor);
        } catch (IllegalArgumentException e) {
            throw new CollectiveException(p, run.what() + ": rank " + p + " sent a malformed region descriptor: " + e.getMessage(), e);
        }
        if (offset + length > r.length()) {
            throw new CollectiveException(p, run.what() + ": rank " + p + "'s receive region is " + r.length() + " bytes, "
                    + "this member writes " + length + " bytes at offset " + offset + ": do all members pass the same sizes?", null);
        }
        return r;
    }

    /**
     * Every other member writes into {@code recv} (told with READY), and this member writes
     * {@code blockFor.apply(p)} at {@code offset} of each member p's region.
     */
    CompletableFuture<Void> exchangeWithAll(CollectiveRun run, LocalRegion recv, IntFunction<LocalRegion> blockFor, long offset) {
        List<CompletableFuture<?>> steps = new ArrayList<>();
        for (int p : mesh.others()) {
            steps.add(receiveFrom(run, p, recv, READY, DATA));
            steps.add(writeTo(run, p, blockFor.apply(p), offset, READY, DATA));
        }
        return all(steps);
    }

    static CompletableFuture<Void> all(List<? extends CompletableFuture<?>> steps) {
        return CompletableFuture.allOf(steps.toArray(CompletableFuture[]::new));
    }

    static void copy(LocalRegion from, long fromOffset, LocalRegion to, long toOffset, long n) {
        MemorySegment.copy(from.segment(), fromOffset, to.segment(), toOffset, n);
    }
}
