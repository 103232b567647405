package dev.jrdma.perf;

import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.LocalRegion;
import dev.jrdma.Message;
import dev.jrdma.Rdma;
import dev.jrdma.exceptions.RdmaException;

import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The few messages a {@code jrdma perf} client and server exchange around each measurement,
 * told from data messages by their immediate value: START (test, size, iterations), READY, END,
 * ENDED, BYE; 16 bytes each, big-endian ints.
 */
final class PerfControl {
    static final int IMM = 0x4A525046;   // "JRPF"
    static final int START = 1, READY = 2, END = 3, ENDED = 4, BYE = 5;
    static final int BYTES = 16;
    /**
     * Set in START's test by a -c UD client: a server of the other kind refuses by name (its READY
     * and the data would otherwise be misread). END's first int is then the datagrams the client
     * sent, ENDED's the ones the server received.
     */
    static final int DATAGRAMS = 0x100;
    /** How long either side waits for the other before it gives up. */
    static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private PerfControl() {
    }

    /**
     * Sends a control message and waits for its completion, except BYE and ENDED: the last
     * message of a run needs the peer's acknowledgement, which a peer that stopped polling or
     * closed never sends (and the next message from the peer tells anyway that it arrived).
     */
    static void send(Rdma rdma, Connection c, LocalRegion buf, int kind, int a, int b, int d) {
        buf.segment().set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 0, kind);
        buf.segment().set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 4, a);
        buf.segment().set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 8, b);
        buf.segment().set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 12, d);
        CompletableFuture<Void> f = c.sendWithImm(IMM, buf.slice(0, BYTES));
        if (kind != BYE && kind != ENDED) {
            await(rdma, c, f, "sending a control message");
        }
    }

    /** The next message, polling (INLINE); fails when the connection ends or nothing comes in time. */
    static Message next(Rdma rdma, Connection c) {
        return await(rdma, c, c.receive(), "waiting for the peer");
    }

    /** The next message, which must be the control message {@code kind}; its four ints. */
    static int[] expect(Rdma rdma, Connection c, int kind) {
        return expect(rdma, c, kind, TIMEOUT_NANOS);
    }

    /**
     * As {@link #expect(Rdma, Connection, int)}, waiting up to {@code timeoutNanos}: a server
     * waiting for the END of a one-sided test sees nothing of it (the device serves it) and
     * must wait as long as the client runs, for as long as the connection is up.
     */
    static int[] expect(Rdma rdma, Connection c, int kind, long timeoutNanos) {
        return expect(rdma, c, kind, timeoutNanos, false);
    }

    /**
     * As {@link #expect(Rdma, Connection, int, long)}; with {@code idleSleep}, a poll that finds
     * nothing is followed by a sleep ({@link IdleBackoff}, up to 20 ms): for a server whose device
     * serves the client's one-sided operations by itself (verbs, shm), as perftest's server
     * waits in a blocking read meanwhile. Spinning there would take a CPU from the device's own
     * work where that is software (rxe runs in the kernel, on the same CPUs).
     */
    static int[] expect(Rdma rdma, Connection c, int kind, long timeoutNanos, boolean idleSleep) {
        try (Message m = await(rdma, c, c.receive(), "waiting for the peer", timeoutNanos, idleSleep)) {
            if (m.imm().orElse(0) != IMM || m.byteCount() != BYTES) {
                throw new RdmaException("expected a control message, got " + m.byteCount() + " bytes of data"
                        + " (are both ends running the same test and sizes?)");
            }
            var be = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
            int[] v = {m.data().get(be, 0), m.data().get(be, 4), m.data().get(be, 8), m.data().get(be, 12)};
            if (v[0] != kind && v[0] != BYE) {
                throw new RdmaException("expected control message " + kind + ", got " + v[0]);
            }
            return v;
        }
    }

    static <T> T await(Rdma rdma, Connection c, CompletableFuture<T> f, String what) {
        return await(rdma, c, f, what, TIMEOUT_NANOS);
    }

    static <T> T await(Rdma rdma, Connection c, CompletableFuture<T> f, String what, long timeoutNanos) {
        return await(rdma, c, f, what, timeoutNanos, false);
    }

    /** -e: the longest sleep on completion events before a look (jrdma's own IO loops check their deadlines that often). */
    static final long EVENT_SLEEP_NANOS = 50_000_000;

    /**
     * One look for work, as {@link Rdma#poll()}; with -e (an Rdma with an IO loop, bound to this
     * thread by {@link PerfOptions#open}), when there was none, sleeps until a completion or an event
     * (at most {@link #EVENT_SLEEP_NANOS}) and looks again: what perftest -e does with
     * ibv_req_notify_cq and ibv_get_cq_event.
     */
    static int poll(Rdma rdma) {
        int work = rdma.poll();
        if (work != 0 || rdma.ioLoopCount() == 0) {
            return work;
        }
        return rdma.ioLoop(0).awaitWork(EVENT_SLEEP_NANOS, NEVER_AWAKE) + rdma.poll();
    }

    private static final java.util.function.BooleanSupplier NEVER_AWAKE = () -> false;

    /** The longest sleep between looks of an idle server (see {@link IdleBackoff}): the END comes at most this late. */
    static final long IDLE_SLEEP_MAX_NANOS = 20_000_000;

    private static <T> T await(Rdma rdma, Connection c, CompletableFuture<T> f, String what, long timeoutNanos,
                               boolean idleSleep) {
        IdleDeadline idle = new IdleDeadline(timeoutNanos);
        IdleBackoff backoff = idleSleep ? new IdleBackoff(IDLE_SLEEP_MAX_NANOS) : null;
        while (!f.isDone()) {
            if (poll(rdma) == 0) {
                if (backoff != null) {
                    backoff.idle();
                }
                if (c != null && c.state() != ConnectionState.ESTABLISHED && !f.isDone()) {
                    throw new RdmaException("the connection ended while " + what + " (" + c.state() + ")");
                }
                if (idle.expired()) {
                    throw new RdmaException("nothing from the peer for " + timeoutNanos / 1_000_000_000L + " s while " + what);
                }
            }
        }
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new RdmaException(what + " failed: "
                    + (cause.getMessage() != null ? cause.getMessage() : cause.toString()), cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while " + what);
        }
    }
}
