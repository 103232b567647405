package dev.jrdma;

import java.lang.foreign.MemorySegment;

/**
 * One datagram received by a {@link DatagramEndpoint}: its payload, in one of the endpoint's
 * registered receive buffers, and who sent it. Close it when done: that posts the buffer again
 * (until then the endpoint has one buffer fewer to receive into; with none, datagrams that
 * arrive are dropped, as unreliable datagrams are). Reading it after {@code close} throws.
 */
public final class Datagram implements AutoCloseable {
    private final DatagramEndpoint endpoint;
    private final int buffer;
    private final MemorySegment data;
    private final MemorySegment header;
    private final int sourceQp;
    private DatagramAddress sender;
    private boolean closed;

    Datagram(DatagramEndpoint endpoint, int buffer, MemorySegment header, MemorySegment data, int sourceQp) {
        this.endpoint = endpoint;
        this.buffer = buffer;
        this.header = header;
        this.data = data;
        this.sourceQp = sourceQp;
    }

    /** {@return the payload (read-only use is expected; it is the endpoint's buffer)} */
    public synchronized MemorySegment data() {
        checkOpen("data");
        return data;
    }

    /** {@return the payload's length in bytes} */
    public int length() {
        return (int) data.byteSize();
    }

    /**
     * {@return the sender, as an address this datagram's endpoint can answer} On verbs it is made
     * from the datagram's GRH (the sender's IP address) and its completion (the sender's QP), once
     * per sender while the endpoint's sender table keeps it: an address handle. The table keeps
     * the {@link DatagramEndpoint#maxSenders()} most recently seen senders, so this never fails
     * because many others came before; an address whose entry was evicted still answers its
     * sender (see {@link DatagramAddress}).
     *
     * @throws dev.jrdma.exceptions.ConnectionClosedException when the endpoint is closed
     */
    public synchronized DatagramAddress sender() {
        checkOpen("sender");
        if (sender == null) {
            sender = endpoint.senderOf(header, sourceQp);
        }
        return sender;
    }

    private void checkOpen(String what) {
        if (closed) {
            throw new IllegalStateException(what + "() of a closed datagram: its buffer is receiving again");
        }
    }

    /** Posts its buffer again. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        endpoint.repost(buffer);
    }

    @Override
    public String toString() {
        return "Datagram[" + data.byteSize() + " bytes]";
    }
}
