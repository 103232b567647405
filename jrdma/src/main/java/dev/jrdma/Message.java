package dev.jrdma;

import java.lang.foreign.MemorySegment;
import java.util.OptionalInt;

/**
 * A received message (a SEND, or the notice of a WRITE_WITH_IMM) in a pooled receive buffer.
 * {@link #data()} is valid until {@link #close()}, which gives the buffer back to be posted
 * again. In callback mode ({@link Connection#onReceive}) it is closed when the callback returns,
 * and the object itself may be handed to the next callback for the next message (no object per
 * message on the receive path): keep what it holds (bytes, immediate value), not the message.
 */
public final class Message implements AutoCloseable {
    private final Connection connection;
    private int buffer;
    private MemorySegment data;
    private boolean hasImm;
    private int imm;
    private int byteCount;
    private boolean write;
    private boolean closed;

    Message(Connection connection, int buffer, MemorySegment data, int byteCount, boolean hasImm, int imm, boolean write) {
        this.connection = connection;
        reuse(buffer, data, byteCount, hasImm, imm, write);
    }

    /** The next message, in this object again (callback mode: this one was closed when its callback returned). */
    Message reuse(int buffer, MemorySegment data, int byteCount, boolean hasImm, int imm, boolean write) {
        this.buffer = buffer;
        this.data = data;
        this.byteCount = byteCount;
        this.hasImm = hasImm;
        this.imm = imm;
        this.write = write;
        this.closed = false;
        return this;
    }

    /** {@return the bytes of a SEND; empty for a WRITE_WITH_IMM (its bytes went to the written region)} */
    public MemorySegment data() {
        if (closed) {
            throw new IllegalStateException("message already closed: its receive buffer is reused");
        }
        return data;
    }

    /** {@return the immediate value, for SEND_WITH_IMM and WRITE_WITH_IMM} */
    public OptionalInt imm() {
        return hasImm ? OptionalInt.of(imm) : OptionalInt.empty();
    }

    /** {@return whether it carries an immediate value (SEND_WITH_IMM, WRITE_WITH_IMM)} */
    public boolean hasImm() {
        return hasImm;
    }

    /**
     * {@return the immediate value as a plain int, for a receive path that allocates nothing; 0 when it
     * has none ({@link #hasImm()} tells)}
     */
    public int immValue() {
        return hasImm ? imm : 0;
    }

    /** {@return bytes transferred: the message length, or the bytes a WRITE_WITH_IMM wrote} */
    public int byteCount() {
        return byteCount;
    }

    /** {@return true for the notice of a WRITE_WITH_IMM, false for a SEND} */
    public boolean isWrite() {
        return write;
    }

    /**
     * The connection the message arrived on.
     *
     * @return this connection
     */
    public Connection connection() {
        return connection.handle();
    }

    /**
     * Gives the receive buffer back (it is posted again). Idempotent. On a single-threaded
     * {@link Rdma} only its owner may close a message; from another thread this throws and the
     * message stays open.
     */
    @Override
    public void close() {
        if (!closed) {
            connection.repost(buffer);
            closed = true;
        }
    }
}
