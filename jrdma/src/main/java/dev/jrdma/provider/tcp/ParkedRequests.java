package dev.jrdma.provider.tcp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

/**
 * The peer's requests parked behind a SEND that found no receive posted (RNR), kept in order,
 * each with its payload, until receives are posted and they can be applied: a responder that
 * waits for its application must not stop reading the stream, or the responses to this side's
 * own requests behind them would wait too.
 *
 * <p>A budget bounds what a peer can make us hold: {@value #BUDGET} bytes per connection, each
 * frame's payload and a fixed {@value #FRAME_COST} bytes counted <em>before</em> anything is
 * allocated. A frame that does not {@link #fits fit} is not parked: its reader stops there.
 * On the progress thread only.
 */
final class ParkedRequests implements AutoCloseable {
    static final long BUDGET = 8L << 20;
    /** What a parked frame costs beyond its payload: its header and its record, rounded up. */
    static final long FRAME_COST = 128;

    /** A request of the peer's, kept with its payload until it can be applied. */
    static final class Parked {
        final FrameHeader header = new FrameHeader();
        private Arena arena;
        private MemorySegment payload;

        /** Where its payload is (length bytes), or 0 for none. */
        long payloadAddress() {
            return payload == null ? 0 : payload.address();
        }

        private void free() {
            if (arena != null) {
                arena.close();
                arena = null;
                payload = null;
            }
        }
    }

    private final ArrayDeque<Parked> queue = new ArrayDeque<>();
    private long bytes;
    private int readsAndAtomics;
    /** The request whose payload is being read into its parked buffer, not yet in the queue. */
    private Parked filling;

    boolean isEmpty() {
        return queue.isEmpty();
    }

    /** READs and atomics parked (or being parked): requests the peer still waits to have answered. */
    int readsAndAtomics() {
        return readsAndAtomics;
    }

    private static boolean answered(FrameHeader h) {
        return h.type == TcpFrameDescriptor.READ_REQUEST || h.type == TcpFrameDescriptor.COMPARE_SWAP
                || h.type == TcpFrameDescriptor.FETCH_ADD;
    }

    /** Whether a request of {@code length} payload bytes may be parked now. */
    boolean fits(int length) {
        return bytes + FRAME_COST + length <= BUDGET;
    }

    /**
     * Parks the request {@code header} (which must {@link #fits fit}): returns the address its
     * payload is to be read to (0 for none). It joins the queue at {@link #filled}.
     */
    long park(FrameHeader header) {
        Parked p = new Parked();
        p.header.copyFrom(header);
        if (header.length > 0) {
            p.arena = Arena.ofShared();
            p.payload = p.arena.allocate(header.length, 8);
        }
        bytes += FRAME_COST + header.length;
        if (answered(header)) {
            readsAndAtomics++;
        }
        filling = p;
        return p.payloadAddress();
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
        p.free();
    }

    @Override
    public void close() {
        for (Parked p : queue) {
            p.free();
        }
        queue.clear();
        if (filling != null) {
            filling.free();
            filling = null;
        }
        bytes = 0;
        readsAndAtomics = 0;
    }
}
