package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.SYNC;
import static dev.jrdma.collective.GroupWireDescriptor.imm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The order of a member's collectives: they are numbered as they are called and run one after the
 * other (one called before the last one ended starts when it ends), a broken or closed group fails
 * them at once, and in a rejoining group one waits for a member that is away (within the
 * collective time-out). The number is what the collectives' messages carry (their sequence), so
 * that every member matches the same collective; a member that joins again learns where the
 * others are from their SYNC.
 *
 * <p>Threads: the callers of {@link PeerGroup}'s collectives (under {@link #lock}) and the
 * callbacks that end a collective.
 */
final class CollectiveOrder {
    private final GroupMesh mesh;
    /** Guards {@link #tail}, {@link #collectives} and the group's close. */
    private final Object lock = new Object();
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private long collectives;
    /** The collective started last. */
    private volatile CollectiveRun running;

    CollectiveOrder(GroupMesh mesh) {
        this.mesh = mesh;
    }

    /** The collective started last, or null. */
    CollectiveRun running() {
        return running;
    }

    /** Closes the group for new collectives; false when it was closed already. */
    boolean close() {
        synchronized (lock) {
            return mesh.markClosed();
        }
    }

    /**
     * Every other member's SYNC: this member's collectives go on from the highest number the
     * others started (0 in a group forming for the first time; a member rejoining after a
     * restart learns where the rest of the group is).
     */
    CompletableFuture<Void> synced() {
        List<CompletableFuture<byte[]>> syncs = new ArrayList<>();
        for (int p : mesh.others()) {
            syncs.add(mesh.inbox(p).expect(imm(SYNC, 0)));
        }
        return CollectiveSteps.all(syncs).thenRun(() -> {
            long highest = 0;
            for (CompletableFuture<byte[]> f : syncs) {
                byte[] b = f.join();
                if (b.length == Long.BYTES) {
                    highest = Math.max(highest, java.nio.ByteBuffer.wrap(b).getLong());
                }
            }
            synchronized (lock) {
                if (highest > collectives) {
                    collectives = highest;
                    mesh.started = highest;
                }
            }
        });
    }

    /** Runs a collective after the ones called before it; a broken or closed group fails it at once. */
    CompletableFuture<Void> run(String name, Function<CollectiveRun, CompletableFuture<Void>> body) {
        synchronized (lock) {
            if (mesh.closed) {
                return CompletableFuture.failedFuture(new CollectiveException(-1, name + ": the group of rank " + mesh.rank
                        + " is closed", null));
            }
            long number = ++collectives;
            CompletableFuture<Void> result = tail.handle((v, e) -> null).thenCompose(x -> start(name, number, body));
            tail = result;
            return result;
        }
    }

    private CompletableFuture<Void> start(String name, long number, Function<CollectiveRun, CompletableFuture<Void>> body) {
        GroupConfig config = mesh.config;
        if (config.rejoins() && !mesh.closed) {
            for (int i = 0; i < mesh.size; i++) {
                if (i != mesh.rank) {
                    mesh.awayIfDown(i);
                }
            }
        }
        CompletableFuture<Void> w = mesh.whole;
        if (!w.isDone() && mesh.broken == null && !mesh.closed) {
            return waitForTheMesh(w, name, number, body);
        }
        mesh.started = number;
        CollectiveException b = mesh.broken;
        if (b != null || mesh.closed) {
            return CompletableFuture.failedFuture(new CollectiveException(b == null ? -1 : b.rank(), name + " #" + number
                    + ": the group is " + (mesh.closed ? "closed" : "broken since " + b.getMessage() + "; close it"), b));
        }
        CollectiveRun run = new CollectiveRun(name, number, config.collectiveTimeout());
        for (int i = 0; i < mesh.size; i++) {
            mesh.inbox(i).forgetBefore(run.seq);   // what earlier collectives left is never asked for: out of the budget
        }
        running = run;
        try {
            run.finishWith(body.apply(run));
        } catch (RuntimeException e) {
            run.fail(e instanceof CollectiveException ce ? ce.rank() : -1, e);
        }
        return run.result.whenComplete((v, e) -> ended(e));
    }

    /** A member is away (rejoining group): waits for it, within the collective's time. */
    private CompletableFuture<Void> waitForTheMesh(CompletableFuture<Void> w, String name, long number,
                                                   Function<CollectiveRun, CompletableFuture<Void>> body) {
        GroupConfig config = mesh.config;
        return w.orTimeout(config.collectiveTimeout().toNanos(), TimeUnit.NANOSECONDS).handle((v, e) -> e)
                .thenCompose(e -> {
                    if (e == null || mesh.broken != null || mesh.closed) {
                        return start(name, number, body);
                    }
                    mesh.started = number;
                    int missing = mesh.firstMissing();
                    return CompletableFuture.failedFuture(new CollectiveException(missing, name + " #" + number
                            + ": rank " + missing + (missing < 0 ? "" : " (" + mesh.members.get(missing) + ")")
                            + " has not joined again within the collective time-out of "
                            + config.collectiveTimeout().toMillis() + " ms", null));
                });
    }

    /** A collective ended with {@code e} (null: success): a failure breaks a group that does not rejoin. */
    private void ended(Throwable e) {
        if (e != null && mesh.broken == null && !mesh.config.rejoins()) {
            mesh.broken = e instanceof CollectiveException ce ? ce : new CollectiveException(-1, e.getMessage(), e);
        }
        if (e != null && mesh.config.rejoins()) {
            // The member the failure names, if its connection is down: away now, so that it
            // may join again before the next collective looks.
            Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            int r = c instanceof CollectiveException ce ? ce.rank() : -1;
            if (r >= 0 && r < mesh.size && r != mesh.rank) {
                mesh.awayIfDown(r);
            }
        }
    }
}
