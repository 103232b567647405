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

    /** {@return operations in the batch so far} */
    public int size() {
        return size;
    }

    /**
     * Adds a send of {@code buf}, as {@link Connection#send(LocalRegion)}.
     *
     * @param buf the bytes to send (registered memory, its whole length)
     * @return this batch
     */
    public Batch send(LocalRegion buf) {
        return add(Operation.SEND, buf, null, 0, 0, 0);
    }

    /**
     * Adds a send of {@code buf} with an immediate value, as {@link Connection#sendWithImm(int, LocalRegion)}.
     *
     * @param immediate the 32-bit immediate value the peer's receive carries
     * @param buf the bytes to send (registered memory, its whole length)
     * @return this batch
     */
    public Batch sendWithImm(int immediate, LocalRegion buf) {
        return add(Operation.SEND_WITH_IMM, buf, null, 0, 0, immediate);
    }

    /**
     * Adds a write of {@code buf} to {@code target}, as {@link Connection#write(LocalRegion, RemoteRegion)}.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param target where the bytes go in the peer's memory
     * @return this batch
     */
    public Batch write(LocalRegion buf, RemoteRegion target) {
        return add(Operation.WRITE, buf, target, 0, 0, 0);
    }

    /**
     * Adds a write with an immediate value, as {@link Connection#writeWithImm(LocalRegion, RemoteRegion, int)}.
     *
     * @param buf the bytes to write (registered memory, its whole length)
     * @param target where the bytes go in the peer's memory
     * @param immediate the 32-bit immediate value the peer's receive carries
     * @return this batch
     */
    public Batch writeWithImm(LocalRegion buf, RemoteRegion target, int immediate) {
        return add(Operation.WRITE_WITH_IMM, buf, target, 0, 0, immediate);
    }

    /**
     * Adds a read of {@code source} into {@code buf}, as {@link Connection#read(RemoteRegion, LocalRegion)}.
     *
     * @param source the peer's memory to read, from its start
     * @param buf where the bytes read go (registered memory): as many as its length
     * @return this batch
     */
    public Batch read(RemoteRegion source, LocalRegion buf) {
        return add(Operation.READ, buf, source, 0, 0, 0);
    }

    /**
     * Its prior value is element {@code i} of the submit result, {@code i} its place in the batch.
     *
     * @param target where the bytes go in the peer's memory
     * @param expected the value the word must hold for the swap to happen
     * @param desired the value the word then gets
     * @return this batch
     */
    public Batch compareAndSwap(RemoteRegion target, long expected, long desired) {
        return add(Operation.COMPARE_AND_SWAP, null, target, expected, desired, 0);
    }

    /**
     * Its prior value is element {@code i} of the submit result, {@code i} its place in the batch.
     *
     * @param target where the bytes go in the peer's memory
     * @param delta what to add (64-bit, wrapping)
     * @return this batch
     */
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

    /**
     * Forgets the operations (the arrays stay, for the next batch).
     *
     * @return this batch
     */
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
     *
     * @return a future of the prior values of the batch's atomics, by their place in the batch (0 for the other
     *     operations), once all completed; exceptionally with the first failure
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

    /**
     * {@link #submit()} with a handler, which gets the same array.
     *
     * @param <A> the type of the attachment
     * @param attachment handed to {@code handler} as it is (may be null)
     * @param handler called once, on the IO thread, when the operation completed or failed
     */
    public <A> void submit(A attachment, CompletionHandler<long[], ? super A> handler) {
        BatchCompletion bc = new BatchCompletion(size, null, attachment, handler);
        try {
            connection.submit(this, bc);
        } catch (RuntimeException e) {
            handler.failed(e, attachment);
        }
    }
}
