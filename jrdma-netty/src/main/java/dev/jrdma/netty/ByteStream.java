package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.io.IOException;
import java.nio.channels.CompletionHandler;

/**
 * The byte stream of one channel over one jrdma connection, with credit-based flow control:
 * the sender never has more messages unreturned than the receiver keeps receive buffers posted,
 * so no send ever meets an empty receive queue (no RNR), and a receiver whose application does not
 * read stops its sender after a bounded amount (its receive queue's worth).
 *
 * <p><b>Send.</b> Written bytes are copied into a registered send area of fixed slots (one
 * message each, up to the peer's receive buffer size), coalescing small writes as TCP does, and
 * each full slot, or the last one at a flush, goes as one {@link StreamMessage#DATA} message. A
 * write is done once copied (as a socket write is, once in the kernel); the slot is reused when
 * its send completes. Sends complete in order, so slots and the record of what was posted are
 * rings. A buffer in registered memory of this connection's {@code Rdma} (a
 * {@link JrdmaByteBufAllocator}'s) is not copied: {@link #writeRegistered} sends its bytes where
 * they are, holding a reference to the buffer until the messages completed.
 *
 * <p><b>Receive.</b> Each DATA message is copied into a buffer of the channel's allocator and
 * queued; the read path takes slices of it. Its credit is owed once the read path took all its
 * bytes, and goes back with the next message sent, or in a {@link StreamMessage#CREDIT} message
 * once a quarter of the peer's window is owed.
 *
 * <p><b>Credits.</b> Of the peer's receive queue depth D, data uses D - {@link #RESERVED}; the
 * reserved ones carry CREDIT, SHUTDOWN_OUTPUT and CLOSE, so credits can always go back (a CREDIT
 * is itself returned with the next message, and never answered by one).
 *
 * <p>Its parts: the send slots ({@link SendArea}), what was posted and not yet completed
 * ({@link PostedSends}), and the bytes received and not yet read ({@link StreamInbound}); this class
 * keeps the credits and the protocol (what each message kind means, the ending).
 *
 * <p>Everything here runs on the channel's event loop, which is the connection's IO loop: the
 * receive, completion and disconnect callbacks too. Nothing is locked.
 */
final class ByteStream implements CompletionHandler<Void, ByteStream> {
    /** Peer receive buffers kept for control messages. */
    static final int RESERVED = 4;
    /** The smallest receive queue depth a stream works with: the reserve, and some for data. */
    static final int MIN_DEPTH = RESERVED + 4;

    /** {@return {@code config}, checked to be one a stream can run on} */
    static dev.jrdma.ConnectionConfig checkedConfig(dev.jrdma.ConnectionConfig config) {
        java.util.Objects.requireNonNull(config, "config");
        if (config.receiveQueueDepth() < MIN_DEPTH) {
            throw new IllegalArgumentException("a jrdma channel needs receiveQueueDepth >= " + MIN_DEPTH + " (" + RESERVED
                    + " receive buffers are kept for control messages), not " + config.receiveQueueDepth());
        }
        return config;
    }
    /** The most send slots of a stream (each one message). */
    static final int MAX_SEND_SLOTS = 16;
    /**
     * The largest message sent, whatever receive buffer size the peer announces: the send area is
     * {@code slots × this} at most, so a peer cannot make us allocate more by announcing more.
     */
    static final int MAX_MESSAGE = 64 * 1024;

    /** What the stream tells its channel; on the event loop. */
    interface Listener {
        /** Data, or the end of the peer's output, was queued for reading. */
        void readable();

        /** Room to send came back (credits, slots, send queue): flush what waits. */
        void writable();

        /**
         * The connection ended: {@code cause} is null when the peer closed first ({@link StreamMessage#CLOSE})
         * or this side did, else why (a reset, a protocol error, a failed operation).
         */
        void gone(IOException cause);

        /** Where received bytes are copied to. */
        ByteBufAllocator allocator();
    }

    private final Rdma rdma;
    private final Connection connection;
    private final Listener listener;
    /** The event loop: a post refused at once is dealt with after the call that posted (never inside a write). */
    private final java.util.concurrent.Executor loop;
    private final SendArea area;
    private final int slotSize;
    private final int myDepth;
    private final int sendDepth;
    private final int returnAt;

    // Sending: slots in ring order; what was posted, in order (PostedSends).
    private final PostedSends posted;
    /** The last post failed at once (its handler ran inside the post): see {@link #failed}. */
    private boolean inPost;
    /** A post failed at once: the stream is ending. */
    private boolean refused;
    private boolean wantRoom;

    // Credits.
    private int credits;
    private int sentUnreturned;
    private int owed;

    // Receiving.
    private final StreamInbound inbound = new StreamInbound();
    private boolean discardInput;
    private boolean eof;
    private boolean peerClosed;

    // Ending.
    private boolean shutdownSent;
    private boolean closeSent;
    private int pendingControl;   // bit per kind waiting for a credit
    private boolean closing;
    private boolean gone;

    /**
     * Starts the stream on an established connection; from now on its messages come here.
     *
     * @throws IllegalArgumentException when either side's receive queue is too shallow for a stream
     */
    ByteStream(Rdma rdma, Connection connection, Listener listener, java.util.concurrent.Executor loop) {
        this.rdma = rdma;
        this.connection = connection;
        this.listener = listener;
        this.loop = loop;
        int peerDepth = connection.peerReceiveQueueDepth();
        this.myDepth = connection.config().receiveQueueDepth();
        if (peerDepth < MIN_DEPTH || myDepth < MIN_DEPTH) {
            throw new IllegalArgumentException("a jrdma stream needs a receive queue depth of at least " + MIN_DEPTH
                    + " on both sides (" + RESERVED + " are kept for control messages): this side has " + myDepth
                    + ", the peer " + peerDepth + " (ConnectionConfig.receiveQueueDepth)");
        }
        this.slotSize = Math.min(MAX_MESSAGE, connection.peerReceiveBufferSize());
        if (slotSize < 1) {
            throw new IllegalArgumentException("the peer announced no receive buffer size: it is no jrdma stream peer");
        }
        this.sendDepth = connection.config().sendQueueDepth();
        this.area = new SendArea(rdma, Math.min(MAX_SEND_SLOTS, Math.min(peerDepth - RESERVED, sendDepth)), slotSize);
        this.posted = new PostedSends(sendDepth);
        this.credits = peerDepth;
        this.returnAt = Math.max(1, (myDepth - RESERVED) / 4);
    }

    /**
     * From now on the connection's messages and its end come here (those that came before first).
     * A connection that ended before is reported ended at once.
     */
    void start() {
        connection.onDisconnect(c -> disconnected());
        connection.onReceive(this::received);
        dev.jrdma.ConnectionState state = connection.state();
        if (state == dev.jrdma.ConnectionState.CLOSED || state == dev.jrdma.ConnectionState.ERROR) {
            disconnected();
        }
    }

    Connection connection() {
        return connection;
    }

    /** {@return the jrdma instance of the connection: buffers in its registered memory go without a copy} */
    Rdma rdma() {
        return rdma;
    }

    /** {@return the messages this side may still send (data uses all but {@link #RESERVED})} */
    int credits() {
        return credits;
    }

    /** {@return the largest message the peer takes: the size of a send slot} */
    int maxMessage() {
        return slotSize;
    }

    // ------------------------------------------------------------------ sending

    /** {@return whether output is over: shut down, closing, or the connection gone} */
    boolean outputClosed() {
        return shutdownSent || closeSent || gone;
    }

    /** {@return whether the connection ended (whatever ended it)} */
    boolean isGone() {
        return gone;
    }

    /** {@return whether the peer closed (its CLOSE came): it reads nothing more} */
    boolean peerClosed() {
        return peerClosed;
    }

    /**
     * Copies up to {@code length} bytes of {@code buf} from {@code index} into the send slots,
     * sending each slot that fills; returns how many it took (0: no room or credit now, and
     * {@link Listener#writable()} follows when there is). {@code buf}'s indexes are not moved.
     */
    int write(ByteBuf buf, int index, int length) {
        int taken = 0;
        while (taken < length) {
            if (!area.filling()) {
                if (!canSendData()) {
                    wantRoom = true;
                    break;
                }
                area.startFill();
                credits--;   // the slot's message has its credit from now on
            }
            taken += area.fill(buf, index + taken, length - taken);
            if (area.full()) {
                postFill();
            }
        }
        return taken;
    }

    /**
     * Sends up to {@code length} bytes of {@code buf} from {@code index} where they are, in
     * {@code region} from {@code offset}, as messages of up to the peer's receive buffer size,
     * after what was written before; returns how many it took (0: no credit now, and
     * {@link Listener#writable()} follows). Each message holds a reference to {@code buf} until
     * it completed. {@code buf}'s indexes are not moved.
     */
    int writeRegistered(ByteBuf buf, int index, int length, LocalRegion region, long offset) {
        flush();   // the bytes before these go first
        int taken = 0;
        while (taken < length) {
            if (!canSendWithoutSlot()) {
                wantRoom = true;
                break;
            }
            int n = Math.min(length - taken, slotSize);
            credits--;
            buf.retain();
            post(StreamMessage.DATA, region.slice(offset + taken, n), -1, buf);
            if (refused) {
                break;   // it released its reference, and the stream ends (failed)
            }
            taken += n;
        }
        return taken;
    }

    /** {@return the bytes the send slot being filled still takes (0: none is being filled)} */
    int roomInSlotBeingFilled() {
        return area.roomInSlotBeingFilled();
    }

    private boolean canSendWithoutSlot() {
        return !gone && !refused && credits > RESERVED && posted.hasRoom();
    }

    /** Sends the slot being filled, if any: the end of a flush. */
    void flush() {
        if (area.filling() && area.filled() > 0) {
            postFill();
        }
    }

    private boolean canSendData() {
        return !gone && !refused && area.hasFreeSlot() && credits > RESERVED && posted.hasRoom();
    }

    private void postFill() {
        LocalRegion message = area.takeFilled();
        post(StreamMessage.DATA, message, (int) message.length(), null);
    }

    /** Posts one message whose credit is already taken; every one completes once, in order. */
    private void post(int kind, LocalRegion buf, int dataLength, ByteBuf from) {
        int imm = StreamMessage.imm(kind, owed);
        owed = 0;
        sentUnreturned++;
        posted.add(dataLength, from);
        inPost = true;
        try {
            connection.sendWithImm(imm, buf, this, this);
        } finally {
            inPost = false;
        }
    }

    /** Sends a control message now, or as soon as a credit is there. */
    private void control(int kind) {
        if (gone) {
            return;
        }
        if (credits > 0 && posted.hasRoom()) {
            credits--;
            post(kind, area.empty(), -1, null);
        } else {
            pendingControl |= 1 << kind;
        }
    }

    private void sendPendingControl() {
        for (int kind = StreamMessage.CREDIT; kind <= StreamMessage.CLOSE && pendingControl != 0 && !gone; kind++) {
            int bit = 1 << kind;
            if ((pendingControl & bit) != 0 && credits > 0 && posted.hasRoom()) {
                pendingControl &= ~bit;
                if (kind != StreamMessage.CREDIT || owed > 0) {
                    credits--;
                    post(kind, area.empty(), -1, null);
                }
            }
        }
    }

    /** A send completed: its slot (for data) and its place in the send queue are free. */
    @Override
    public void completed(Void result, ByteStream attachment) {
        int length = posted.takeOldest();
        if (length >= 0) {
            area.oldestDone();
        }
        if (closing && peerClosed && posted.isEmpty()) {
            disconnect();
            return;
        }
        roomCameBack();
    }

    /** A send failed: the connection is going (a failed send puts it in ERROR), or a post was refused. */
    @Override
    public void failed(Throwable e, ByteStream attachment) {
        if (inPost) {
            refused = true;
            posted.dropNewest();   // the one just recorded: it never went out
        } else {
            posted.takeOldest();
        }
        if (!gone && !closing) {
            IOException cause = new IOException("a send on " + connection + " failed: " + e.getMessage(), e);
            if (inPost) {
                loop.execute(() -> end(cause));   // not inside the write that posted
            } else {
                end(cause);
            }
        }
    }

    // ------------------------------------------------------------------ receiving

    private void received(Connection c, Message m) {
        if (gone) {
            return;
        }
        if (!m.hasImm() || m.isWrite()) {
            protocolError(m.isWrite() ? "a WRITE_WITH_IMM (this stream exposes no memory)" : "a SEND without an immediate value");
            return;
        }
        int imm = m.immValue();
        int kind = StreamMessage.kind(imm);
        int returned = StreamMessage.credits(imm);
        if (returned > sentUnreturned) {
            protocolError("it gave back " + returned + " credits, but only " + sentUnreturned + " messages of ours are unreturned");
            return;
        }
        if (inbound.held() + owed + 1 > myDepth) {
            protocolError("it sent more messages than it had credits for (" + myDepth + ")");
            return;
        }
        sentUnreturned -= returned;
        credits += returned;
        if (!take(kind, imm, m)) {
            return;
        }
        if (returned > 0) {
            roomCameBack();
        }
        if (kind != StreamMessage.CREDIT) {
            listener.readable();
        }
        if (discardInput) {
            returnCredits();
        }
    }

    /** A message of {@code kind}, its credits counted: false when the stream ended on it, or it closed the stream. */
    private boolean take(int kind, int imm, Message m) {
        switch (kind) {
            case StreamMessage.DATA -> {
                int n = m.byteCount();
                if (eof || n == 0) {
                    protocolError(eof ? "DATA after the end of its output" : "an empty DATA message");
                    return false;
                }
                if (discardInput || closing) {
                    owed++;   // this side shut its input, or closed: the bytes go nowhere
                } else {
                    inbound.add(listener.allocator(), m.data(), n);
                }
            }
            case StreamMessage.CREDIT -> owed++;
            case StreamMessage.SHUTDOWN_OUTPUT -> {
                if (eof) {
                    protocolError("SHUTDOWN_OUTPUT after the end of its output");
                    return false;
                }
                owed++;
                eof = true;
            }
            case StreamMessage.CLOSE -> {
                if (peerClosed) {
                    protocolError("a second CLOSE");
                    return false;
                }
                owed++;
                eof = true;
                peerClosed = true;
                if (closing) {
                    if (posted.isEmpty()) {
                        disconnect();
                    }
                    return false;
                }
            }
            default -> {
                protocolError("a message of " + StreamMessage.name(kind) + " (immediate 0x" + Integer.toHexString(imm) + ")");
                return false;
            }
        }
        return true;
    }

    /** Credits or room in the send queue came back: what waited for them goes. */
    private void roomCameBack() {
        if (pendingControl != 0) {
            sendPendingControl();
        }
        if (wantRoom && canSendData()) {
            wantRoom = false;
            listener.writable();
        }
    }

    /** {@return whether bytes are queued for reading} */
    boolean hasInbound() {
        return !inbound.isEmpty();
    }

    /** {@return whether the peer's output ended (SHUTDOWN_OUTPUT or CLOSE) and every byte before it was read} */
    boolean inputEnded() {
        return eof && inbound.isEmpty();
    }

    /**
     * The next at most {@code max} queued bytes (a retained slice: the caller releases it), or
     * null when none is queued. A message whose bytes are all taken is done: its credit is owed.
     */
    ByteBuf read(int max) {
        ByteBuf out = inbound.read(max);
        if (inbound.finishedByLastRead()) {
            owed++;
        }
        return out;
    }

    /** After a read loop: gives credits back when enough are owed and no message of ours carries them soon. */
    void returnCredits() {
        if (owed >= returnAt || (owed > 0 && discardInput)) {
            control(StreamMessage.CREDIT);
        }
    }

    /** Local shutdownInput: drops what is queued and what comes, giving their credits back. */
    void discardInput() {
        discardInput = true;
        owed += inbound.discard();
        returnCredits();
    }

    // ------------------------------------------------------------------ ending

    /** This side writes no more: after what was written, the peer reads the end of its input. */
    void shutdownOutput() {
        if (outputClosed()) {
            return;
        }
        flush();
        shutdownSent = true;
        control(StreamMessage.SHUTDOWN_OUTPUT);
    }

    /**
     * Closes: abortively (the connection ends now; the peer sees a reset), or gracefully (what was
     * written goes first, then CLOSE; the connection ends when the peer's CLOSE came and our sends
     * are done, or when {@code linger} runs out). Never waits.
     *
     * @return whether the connection must still be ended by the caller after the linger time
     */
    boolean close(boolean abortive) {
        if (gone) {
            release();
            return false;
        }
        if (abortive) {
            disconnect();
            return false;
        }
        flush();
        closing = true;
        if (!closeSent) {
            closeSent = true;
            control(StreamMessage.CLOSE);
        }
        if (peerClosed && posted.isEmpty()) {
            disconnect();
            return false;
        }
        return !gone;
    }

    /** The linger time ran out: ends the connection whatever the peer did. */
    void lingerExpired() {
        if (!gone) {
            disconnect();
        }
    }

    private void protocolError(String what) {
        end(new StreamProtocolException("the peer at " + connection.remoteAddress() + " broke the stream protocol: " + what));
    }

    /** Ends the connection for {@code cause} (null: an orderly end); the channel hears of it. */
    private void end(IOException cause) {
        if (gone) {
            return;
        }
        gone = true;
        connection.close();
        releaseWhenDone();
        listener.gone(cause);
    }

    private void disconnect() {
        end(null);
    }

    /** The connection went down (on the IO loop). */
    private void disconnected() {
        if (gone) {
            return;
        }
        gone = true;
        releaseWhenDone();
        listener.gone(closing || peerClosed ? null : new IOException("Connection reset by peer: the jrdma connection to "
                + connection.remoteAddress() + " ended without the peer's CLOSE"
                + (connection.failure() != null ? " (" + connection.failure().getMessage() + ")" : "")));
    }

    /** Gives the send area back; jrdma holds its memory until every send that uses it ended. */
    private void releaseWhenDone() {
        area.close();
    }

    /** Drops what is queued for reading (the channel closed). */
    void release() {
        inbound.discard();
    }
}
