package dev.jrdma.engine.region;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Leak detection ({@code Rdma.Builder.leakDetection}): each watched region is held by a phantom
 * reference with the stack where it was made; one that the garbage collector finds unreachable
 * while what it held ({@code R}: its resources) is still open is reported once, with a log
 * warning. Its memory stays registered until the {@code Rdma} closes (releasing it earlier could
 * hand it to another region while an operation still targets it).
 *
 * <p>Threads: any (the set is concurrent, the queue is the JDK's).
 *
 * @param <R> what a region holds, which outlives it
 */
public final class LeakDetector<R> {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final Set<Watch<R>> watched = ConcurrentHashMap.newKeySet();
    private final ReferenceQueue<Object> collected = new ReferenceQueue<>();
    private final Predicate<R> isClosed;

    /** @param isClosed whether a region's resources were closed (then it was no leak) */
    public LeakDetector(Predicate<R> isClosed) {
        this.isClosed = isClosed;
    }

    /** Watches one region for leak detection: enqueued once the region is unreachable. */
    public static final class Watch<R> extends PhantomReference<Object> {
        final R resources;
        final Throwable madeAt;

        Watch(Object region, R resources, ReferenceQueue<Object> queue) {
            super(region, queue);
            this.resources = resources;
            this.madeAt = new Throwable(resources + " was made here");
        }
    }

    /** {@return a watch of {@code region}, which holds {@code resources}: the stack here is where it was made} */
    public Watch<R> watch(Object region, R resources) {
        Watch<R> w = new Watch<>(region, resources, collected);
        watched.add(w);
        return w;
    }

    /** Stops watching (the region was closed). */
    public void forget(Watch<R> w) {
        watched.remove(w);
        w.clear();
    }

    /**
     * Logs each region that was garbage-collected without being closed, with where it was made;
     * returns the stack of each it reported.
     */
    public List<Throwable> report() {
        List<Throwable> found = new ArrayList<>();
        Reference<?> ref;
        while ((ref = collected.poll()) != null) {
            @SuppressWarnings("unchecked")
            Watch<R> leak = (Watch<R>) ref;
            if (watched.remove(leak) && !isClosed.test(leak.resources)) {
                found.add(leak.madeAt);
                LOG.log(System.Logger.Level.WARNING, "leak: " + leak.resources + " was garbage-collected without close();"
                        + " its memory stays registered until the Rdma closes. It was made here:", leak.madeAt);
            }
        }
        return found;
    }
}
