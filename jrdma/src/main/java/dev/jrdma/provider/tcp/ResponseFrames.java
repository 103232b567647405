package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;
import static dev.jrdma.spi.QueuePair.WR_ATOMIC_CMP_AND_SWP;
import static dev.jrdma.spi.QueuePair.WR_ATOMIC_FETCH_AND_ADD;
import static dev.jrdma.spi.QueuePair.WR_RDMA_READ;

import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The peer's answers to our requests, as they come in its stream: ACK, NAK and RNR_WAIT for the
 * send queue, READ_RESPONSE (whose data lands in the READ's local buffer) and ATOMIC_RESPONSE
 * (the prior value, stored in the atomic's). The {@link TcpRequester} retires what each answers;
 * an answer to nothing outstanding, or one that does not fit the request it names, is a lie and
 * ends the connection. Progress thread only.
 */
final class ResponseFrames {
    private final TcpQueuePair qp;
    private final PayloadLanding payload;

    ResponseFrames(TcpQueuePair qp, PayloadLanding payload) {
        this.qp = qp;
        this.payload = payload;
    }

    /** Takes response frame {@code f}; false when it is a lie (the connection ends). */
    boolean take(FrameHeader f) {
        TcpRequester requester = qp.requester;
        switch (f.type) {
            case ACK -> requester.retire(f.seq, true);
            case RNR_WAIT -> requester.peerWaits(f.seq);
            case NAK -> {
                if (f.status == WorkCompletion.SUCCESS || f.status > WorkCompletion.MAX_STATUS) {
                    qp.malformed("a NAK with status " + f.status + ", which is no error");
                    return false;
                }
                requester.retire(f.seq - 1, true);
                requester.failHead(f.seq, f.status);
            }
            case READ_RESPONSE -> {
                requester.retire(f.seq - 1, true);
                if (!requester.headIs(f.seq, WR_RDMA_READ) || f.length != requester.headLength()) {
                    qp.malformed("READ_RESPONSE " + f.seq + " of " + f.length + " bytes answers no read outstanding");
                    return false;
                }
                TcpMemoryRegistration r = f.length == 0 ? null : qp.registrations.lookup(requester.headLkey());
                if (r != null) {
                    payload.into(r, requester.headLocalAddress(), f.length);
                } else {
                    payload.drop(f.length);   // a local buffer closed meanwhile
                }
            }
            default -> {
                requester.retire(f.seq - 1, true);
                if (!requester.headIs(f.seq, WR_ATOMIC_CMP_AND_SWP) && !requester.headIs(f.seq, WR_ATOMIC_FETCH_AND_ADD)) {
                    qp.malformed("ATOMIC_RESPONSE " + f.seq + " answers no atomic outstanding");
                    return false;
                }
                TcpMemoryRegistration r = qp.registrations.lookup(requester.headLkey());
                if (r != null && r.enter()) {
                    try {
                        MemorySegment.ofAddress(requester.headLocalAddress()).reinterpret(8)
                                .set(ValueLayout.JAVA_LONG_UNALIGNED, 0, f.compareAdd);
                    } finally {
                        r.exit();
                    }
                }
            }
        }
        return true;
    }
}
