package dev.jrdma;


import java.nio.channels.CompletionHandler;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * Operations on one connection posted together: one {@code ibv_post_send} for the whole chain
 * (one doorbell), only the last request signaled. Build it, then {@link #submit()}:
 *
 * <pre>{@code
 * long[] priors = c.batch().write(a, ra).write(b, rb).fetchAndAdd(counter, 1).read(rc, cbuf).submit().join();
 * }</pre>
 *
 * The batch completes when all its operations have; with the first failure if one failed
 * (the others are still each completed exactly once: on RC a failure puts the connection in
 * error, which flushes those after it). A batch fits the send queue
 * ({@link ConnectionConfig#sendQueueDepth()}) and is for one thread; after {@code submit} it
 * may be {@link #clear()}ed and filled again.
 */
public final class Batch {
    private final Connection connection;
    int size;
    Operation[] op = new Operation[8];
    LocalRegion[] local = new LocalRegion[8];
    RemoteRegion[] remote = new RemoteRegion[8];
    long[] compareAdd = new long[8];
    long[] swap = new long[8];
    int[] imm = new int[8];

    Batch(Connection connection) {
        this.connection = connection;
    }

    public int size() {
        return size;
    }

    public Batch send(LocalRegion buf) {
        return add(Operation.SEND, buf, null, 0, 0, 0);
    }

    public Batch sendWithImm(int immediate, LocalRegion buf) {
        return add(Operation.SEND_WITH_IMM, buf, null, 0, 0, immediate);
    }

    public Batch write(LocalRegion buf, RemoteRegion target) {
        return add(Operation.WRITE, buf, target, 0, 0, 0);
    }

    public Batch writeWithImm(LocalRegion buf, RemoteRegion target, int immediate) {
        return add(Operation.WRITE_WITH_IMM, buf, target, 0, 0, immediate);
    }

    public Batch read(RemoteRegion source, LocalRegion buf) {
        return add(Operation.READ, buf, source, 0, 0, 0);
    }

    /** Its prior value is element {@code i} of the submit result, {@code i} its place in the batch. */
    public Batch compareAndSwap(RemoteRegion target, long expected, long desired) {
        return add(Operation.COMPARE_AND_SWAP, null, target, expected, desired, 0);
    }

    /** Its prior value is element {@code i} of the submit result, {@code i} its place in the batch. */
    public Batch fetchAndAdd(RemoteRegion target, long delta) {
        return add(Operation.FETCH_AND_ADD, null, target, delta, 0, 0);
    }

    private Batch add(Operation operation, LocalRegion buf, RemoteRegion target, long cmpAdd, long sw, int immediate) {
        if (size == op.length) {
            int n = size * 2;
            op = Arrays.copyOf(op, n);
            local = Arrays.copyOf(local, n);
            remote = Arrays.copyOf(remote, n);
            compareAdd = Arrays.copyOf(compareAdd, n);
            swap = Arrays.copyOf(swap, n);
            imm = Arrays.copyOf(imm, n);
        }
        op[size] = operation;
        local[size] = buf;
        remote[size] = target;
        compareAdd[size] = cmpAdd;
        swap[size] = sw;
        imm[size] = immediate;
        size++;
        return this;
    }

    /** Forgets the operations (the arrays stay, for the next batch). */
    public Batch clear() {
        Arrays.fill(op, 0, size, null);
        Arrays.fill(local, 0, size, null);
        Arrays.fill(remote, 0, size, null);
        size = 0;
        return this;
    }

    /**
     * Posts the chain. The future gets, for each operation in order, the prior value of an atomic
     * and 0 for the others. Bad input (checked for every operation before any is posted) fails
     * the future and posts nothing.
     */
    public CompletableFuture<long[]> submit() {
        CompletableFuture<long[]> f = new CompletableFuture<>();
        BatchCompletion bc = new BatchCompletion(size, f, null, null);
        try {
            connection.submit(this, bc);
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    /** {@link #submit()} with a handler, which gets the same array. */
    public <A> void submit(A attachment, CompletionHandler<long[], ? super A> handler) {
        BatchCompletion bc = new BatchCompletion(size, null, attachment, handler);
        try {
            connection.submit(this, bc);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
        }
    }
}
