package dev.jrdma.netty;

import io.netty.buffer.ByteBuf;

/**
 * What a stream has posted and not yet seen complete, in order (sends complete in order): for each
 * message, the length of the data it holds a send slot for (-1: none: control, or data sent where
 * it lies), and the buffer such data was sent from, released once its message ended. At most the
 * connection's send queue depth. On the event loop.
 */
final class PostedSends {
    private final int[] length;
    private final ByteBuf[] from;
    private int head;
    private int count;

    PostedSends(int depth) {
        this.length = new int[depth];
        this.from = new ByteBuf[depth];
    }

    /** Whether another message fits the send queue. */
    boolean hasRoom() {
        return count < length.length;
    }

    boolean isEmpty() {
        return count == 0;
    }

    /** Notes a message about to be posted. */
    void add(int dataLength, ByteBuf buf) {
        int tail = head + count;
        if (tail >= length.length) {
            tail -= length.length;
        }
        length[tail] = dataLength;
        from[tail] = buf;
        count++;
    }

    /** The oldest message ended: returns its data length (-1: it held no slot); its buffer is let go. */
    int takeOldest() {
        int n = length[head];
        release(head);
        head = head + 1 == length.length ? 0 : head + 1;
        count--;
        return n;
    }

    /** The newest message was refused at its post: it never went out; its buffer is let go. */
    void dropNewest() {
        int tail = head + count - 1;
        release(tail >= length.length ? tail - length.length : tail);
        count--;
    }

    private void release(int i) {
        ByteBuf b = from[i];
        if (b != null) {
            from[i] = null;
            b.release();
        }
    }
}
