package dev.jrdma.netty;

/**
 * The wire format of a jrdma Netty stream: every message is one SEND_WITH_IMM, and its immediate
 * value says what it is (top 8 bits) and gives back credits (low 24 bits: how many of the
 * receiver's messages the sender is done with, so that many more may be sent to it).
 *
 * <ul>
 *   <li>{@link #DATA}: the stream's next bytes, 1 up to the receiver's receive buffer size.</li>
 *   <li>{@link #CREDIT}: nothing but the credits (sent when no data goes the other way).</li>
 *   <li>{@link #SHUTDOWN_OUTPUT}: the sender writes no more (TCP's FIN), after its last data.</li>
 *   <li>{@link #CLOSE}: the sender closed: no more data either way; it disconnects once the peer's
 *       own CLOSE came back (or after its linger time). A connection that ends before a CLOSE came
 *       was reset, as a TCP connection ended by an RST.</li>
 * </ul>
 * Nothing else is on the wire, and every message is checked: an unknown kind, a plain SEND,
 * data after the end of the peer's output, more credits back than were taken, or more messages
 * than were granted ends the connection (a {@link StreamProtocolException}).
 */
final class StreamMessage {
    static final int DATA = 0;
    static final int CREDIT = 1;
    static final int SHUTDOWN_OUTPUT = 2;
    static final int CLOSE = 3;

    /** The most credits one message gives back (24 bits). */
    static final int MAX_CREDITS = (1 << 24) - 1;

    private StreamMessage() {
    }

    static int imm(int kind, int credits) {
        return kind << 24 | credits;
    }

    static int kind(int imm) {
        return imm >>> 24;
    }

    static int credits(int imm) {
        return imm & MAX_CREDITS;
    }

    static String name(int kind) {
        return switch (kind) {
            case DATA -> "DATA";
            case CREDIT -> "CREDIT";
            case SHUTDOWN_OUTPUT -> "SHUTDOWN_OUTPUT";
            case CLOSE -> "CLOSE";
            default -> "unknown kind " + kind;
        };
    }
}
