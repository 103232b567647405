package dev.jrdma.provider.tcp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;

/**
 * The peer's requests parked behind a SEND that found no receive posted (RNR), kept in order,
 * each with its payload, until receives are posted and they can be applied: a responder that
 * waits for its application must not stop reading the stream, or the responses to this side's
 * own requests behind them would wait too.
 *
 * <p>Two budgets bound what a peer can make us hold. Per connection, {@value #BUDGET} bytes: each
 * frame's declared payload and a fixed {@value #FRAME_COST} bytes, counted <em>before</em>
 * anything is allocated; a frame that does not {@link #fits fit} is not parked, and its reader
 * stops there. For the process, the {@link PayloadBudget}: a frame's record is taken from it when
 * it is parked, and its payload's memory as the bytes arrive, in chunks that grow from
 * {@value #FIRST_CHUNK} bytes to {@value #MAX_CHUNK} ({@link #nextChunk}), never what a header
 * declares: a peer that declares 8 MiB and sends 3 KiB holds 4 KiB. On the progress thread only
 * ({@link #close} too, or once it no longer polls).
 */
final class ParkedRequests implements AutoCloseable {
    static final long BUDGET = 8L << 20;
    /** What a parked frame costs beyond its payload: its header and its record, rounded up. */
    static final long FRAME_COST = 128;
    /** The first chunk of a parked payload; each next one is twice the last, up to {@link #MAX_CHUNK}. */
    static final int FIRST_CHUNK = 4096;
    static final int MAX_CHUNK = 1 << 20;

    /** A request of the peer's, kept with its payload until it can be applied. */
    static final class Parked {
        final FrameHeader header = new FrameHeader();
        private Arena arena;
        /** Its payload, in order; their sizes add up to header.length once it is filled. */
        private final ArrayList<MemorySegment> chunks = new ArrayList<>(0);
        /** What it holds of the process's budget: its record and its chunks. */
        private long charged;

        int chunks() {
            return chunks.size();
        }

        long chunkAddress(int i) {
            return chunks.get(i).address();
        }

        int chunkLength(int i) {
            return (int) chunks.get(i).byteSize();
        }

        private void free(PayloadBudget budget) {
            if (arena != null) {
                arena.close();
                arena = null;
            }
            chunks.clear();
            budget.giveBack(charged);
            charged = 0;
        }
    }

    private final PayloadBudget budget;
    private final ArrayDeque<Parked> queue = new ArrayDeque<>();
    private long bytes;
    private int readsAndAtomics;
    /** The request whose payload is being read into its parked buffer, not yet in the queue. */
    private Parked filling;

    ParkedRequests(PayloadBudget budget) {
        this.budget = budget;
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }

    /** Requests parked whole (not the one being parked). */
    int size() {
        return queue.size();
    }

    /** READs and atomics parked (or being parked): requests the peer still waits to have answered. */
    int readsAndAtomics() {
        return readsAndAtomics;
    }

    private static boolean answered(FrameHeader h) {
        return h.type == TcpFrameDescriptor.READ_REQUEST || h.type == TcpFrameDescriptor.COMPARE_SWAP
                || h.type == TcpFrameDescriptor.FETCH_ADD;
    }

    /** Whether a request of {@code length} payload bytes may be parked now (this connection's budget). */
    boolean fits(int length) {
        return bytes + FRAME_COST + length <= BUDGET;
    }

    /** The process's budget this connection parks within. */
    PayloadBudget budget() {
        return budget;
    }

    /**
     * Parks the request {@code header} (which must {@link #fits fit}), its payload still to come
     * ({@link #nextChunk}); false, and nothing is parked, when the process's budget has not even
     * its record's {@value #FRAME_COST} bytes left. It joins the queue at {@link #filled}.
     */
    boolean park(FrameHeader header) {
        if (!budget.tryTake(FRAME_COST)) {
            return false;
        }
        Parked p = new Parked();
        p.charged = FRAME_COST;
        p.header.copyFrom(header);
        bytes += FRAME_COST + header.length;
        if (answered(header)) {
            readsAndAtomics++;
        }
        filling = p;
        return true;
    }

    /**
     * The next chunk of the filling request's payload, for the {@code left} bytes still to come:
     * its size (then {@link #chunkAddress} is where it is), or 0 when the process's budget has no
     * room for it now (nothing is allocated; try again later).
     */
    long nextChunk(long left) {
        Parked p = filling;
        long last = p.chunks.isEmpty() ? FIRST_CHUNK / 2 : p.chunks.getLast().byteSize();
        long size = Math.min(left, Math.min(MAX_CHUNK, last * 2));
        if (!budget.tryTake(size)) {
            return 0;
        }
        p.charged += size;
        if (p.arena == null) {
            p.arena = Arena.ofShared();
        }
        p.chunks.add(p.arena.allocate(size, 8));
        return size;
    }

    /** Where the chunk {@link #nextChunk} just gave is. */
    long chunkAddress() {
        return filling.chunks.getLast().address();
    }

    /** Whether a request is being parked (its payload still coming). */
    boolean filling() {
        return filling != null;
    }

    /** The request being parked was read whole: it joins the queue, to be applied in order. */
    void filled() {
        queue.addLast(filling);
        filling = null;
    }

    /**
     * Sets the request being parked aside (its payload only part come, the process's budget out
     * of room for the rest), so that the requests parked before it can be applied meanwhile;
     * {@link #resumeFilling} or {@link #unpark} takes it back. Returns it (null: none).
     */
    Parked suspendFilling() {
        Parked p = filling;
        filling = null;
        return p;
    }

    /** {@code p}, set aside by {@link #suspendFilling}, is being parked again. */
    void resumeFilling(Parked p) {
        filling = p;
    }

    /**
     * {@code p}, set aside by {@link #suspendFilling}, need not be parked any more (nothing waits
     * before it now, and it was applied as far as its payload came): its memory goes back.
     */
    void unpark(Parked p) {
        bytes -= FRAME_COST + p.header.length;
        if (answered(p.header)) {
            readsAndAtomics--;
        }
        p.free(budget);
    }

    /** The oldest parked request, or null. */
    Parked first() {
        return queue.peekFirst();
    }

    /** The oldest parked request was applied: its memory goes back. */
    void removeFirst() {
        Parked p = queue.pollFirst();
        bytes -= FRAME_COST + p.header.length;
        if (answered(p.header)) {
            readsAndAtomics--;
        }
        p.free(budget);
    }

    @Override
    public void close() {
        for (Parked p : queue) {
            p.free(budget);
        }
        queue.clear();
        if (filling != null) {
            filling.free(budget);
            filling = null;
        }
        bytes = 0;
        readsAndAtomics = 0;
    }
}
