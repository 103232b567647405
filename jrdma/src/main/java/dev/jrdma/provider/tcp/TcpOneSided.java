package dev.jrdma.provider.tcp;

import static dev.jrdma.provider.tcp.TcpFrameDescriptor.*;

import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The responder's one-sided work for one queue pair: a peer's READ, compare-and-swap,
 * fetch-and-add and FLUSH are checked against the registration their key names (key, bounds,
 * access, alignment), executed, and answered. A request that fails a check is refused through
 * {@link TcpResponder#refuse} (NAK; nothing more of the peer's is applied). Progress thread.
 */
final class TcpOneSided {
    private static final VarHandle LONG_ATOMIC = ValueLayout.JAVA_LONG.varHandle();

    private final TcpQueuePair qp;
    private final TcpResponder responder;
    private final AnswerBacklog answers;
    private final StringBuilder why = new StringBuilder();

    TcpOneSided(TcpQueuePair qp, TcpResponder responder, AnswerBacklog answers) {
        this.qp = qp;
        this.responder = responder;
        this.answers = answers;
    }

    /**
     * A FLUSH: the writes before it are applied already (in order, by this thread), so
     * visibility holds; for persistence, a region that is a mapped file is forced to storage.
     * It is acknowledged like a write (endPayload: it always asks for an ACK).
     */
    void flush(FrameHeader f) {
        why.setLength(0);
        long length = f.compareAdd;
        TcpMemoryRegistration r = length <= 0 ? null
                : qp.registrations.checkFrom(qp.scope, f.rkey, f.addr, length, AccessFlags.REMOTE_READ, why);
        if (length > 0 && (r == null || !r.enter())) {
            responder.refuse(WorkCompletion.REM_ACCESS_ERR, "FLUSH", r == null ? why : "the region was closed");
            return;
        }
        if (r == null) {
            return;
        }
        try {
            if (f.imm == 1 && r.memory().isMapped()) {
                r.memory().asSlice(f.addr - r.memory().address(), length).force();
                TcpQueuePair.PERSISTENT_FLUSHES.incrementAndGet();
            }
        } catch (RuntimeException e) {
            responder.refuse(WorkCompletion.REM_OP_ERR, "FLUSH", "forcing the mapped file failed: " + e);
        } finally {
            r.exit();
        }
    }



    /** A READ: checked, then answered from the registration (its bytes are sent from there, fenced). */
    void read(FrameHeader f) {
        int length = (int) f.compareAdd;
        if (f.compareAdd < 0 || f.compareAdd > MAX_PAYLOAD) {
            responder.refuse(WorkCompletion.REM_INV_REQ_ERR, "READ", "it asks for " + f.compareAdd + " bytes");
            return;
        }
        TcpMemoryRegistration r = null;
        if (length > 0) {
            why.setLength(0);
            r = qp.registrations.checkFrom(qp.scope, f.rkey, f.addr, length, AccessFlags.REMOTE_READ, why);
            if (r == null || !r.enter()) {
                responder.refuse(WorkCompletion.REM_ACCESS_ERR, "READ", r == null ? why : "the region was closed");
                return;
            }
        }
        synchronized (qp.txLock) {
            long start = qp.tx.queuedTotal();
            respondHeader(READ_RESPONSE, 0, length, f.seq, 0);
            qp.tx.addPayload(f.addr, length, r, true);   // a large unsent rest is sent on from r, not copied
            answers.queued(start, qp.tx.queuedTotal());
            qp.finishTransmit();
        }
    }


    /** A compare-and-swap or fetch-and-add: checked, done with a CPU atomic, and answered with the prior value. */
    void atomic(FrameHeader f) {
        why.setLength(0);
        TcpMemoryRegistration r = qp.registrations.checkFrom(qp.scope, f.rkey, f.addr, 8, AccessFlags.REMOTE_ATOMIC, why);
        if (r == null || (f.addr & 7) != 0 || !r.enter()) {
            if (r != null && (f.addr & 7) != 0) {
                responder.refuse(WorkCompletion.REM_INV_REQ_ERR, typeName(f.type), "address 0x" + Long.toHexString(f.addr)
                        + " is not 8-byte aligned");
            } else {
                responder.refuse(WorkCompletion.REM_ACCESS_ERR, typeName(f.type), r == null ? why : "the region was closed");
            }
            return;
        }
        long prior;
        try {
            MemorySegment word = MemorySegment.ofAddress(f.addr).reinterpret(8);
            prior = f.type == COMPARE_SWAP
                    ? (long) LONG_ATOMIC.compareAndExchange(word, 0L, f.compareAdd, f.swap)
                    : (long) LONG_ATOMIC.getAndAdd(word, 0L, f.compareAdd);
        } finally {
            r.exit();
        }
        synchronized (qp.txLock) {
            long start = qp.tx.queuedTotal();
            respondHeader(ATOMIC_RESPONSE, 0, 0, f.seq, prior);
            answers.queued(start, qp.tx.queuedTotal());
            qp.finishTransmit();
        }
    }


    /** A response frame (READ_RESPONSE, ATOMIC_RESPONSE, DISCONNECT), with any ACK owed riding on it; under the transmit lock. */
    private void respondHeader(byte type, int status, int length, long seq, long value) {
        qp.frameHeader(type, 0, status, length, seq, 0, 0, 0, value, 0);
    }
}
