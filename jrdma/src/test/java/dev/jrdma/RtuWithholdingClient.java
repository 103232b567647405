package dev.jrdma;

import dev.jrdma.os.LibC;
import dev.jrdma.os.SockAddr;
import dev.jrdma.provider.verbs.ffi.LibRdmacm;
import dev.jrdma.provider.verbs.ffi.RdmaCmEvent;
import dev.jrdma.provider.verbs.ffi.RdmaCmId;
import dev.jrdma.provider.verbs.ffi.RdmaConnParam;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntSupplier;

/**
 * A hostile rdma_cm client, for the verbs flood test: it sends connection requests that a jrdma
 * server accepts (a valid jrdma handshake in the private data) and never sends their RTU. The
 * RTU is librdmacm's to send when the application reads the CONNECT_RESPONSE of an id that has a
 * QP; these ids have none (the request names a made-up QP number), so reading the event sends
 * nothing, and the server's accepted connection waits for as long as the server lets it. It
 * keeps {@code outstanding} requests open, opening a new one for each that the server drops
 * (a REJ), up to a number of requests and a time, on a thread of its own; everything is
 * counted for the test.
 */
final class RtuWithholdingClient implements AutoCloseable {
    /** A request that ended: whether the server had accepted it, how long it was held, the server's reason if it gave one. */
    record Ended(boolean accepted, long heldNanos, String reason, String event, int status, boolean afterStop) {
    }

    private final Arena arena = Arena.ofShared();
    private final MemorySegment channel = LibRdmacm.createEventChannel();
    private final int fd = LibRdmacm.eventChannelFd(channel);
    private final MemorySegment eventOut = arena.allocate(ValueLayout.ADDRESS);
    private final MemorySegment pollfd = arena.allocate(LibC.POLLFD);
    private final InetSocketAddress from, to;
    private final byte[] privateData = Handshake.of(ConnectionConfig.defaults()).encode();
    /** Our open ids by address, with when the server accepted each (0: not yet); the flood thread's. */
    private final Map<Long, long[]> open = new HashMap<>();
    private final IntSupplier serverPending;
    final List<Ended> ended = new CopyOnWriteArrayList<>();
    final List<String> errors = new CopyOnWriteArrayList<>();
    private int qpNumbers;
    private int opened, held, mostHeld, mostServerPending, established;
    private volatile boolean opening = true, stop;
    private Thread thread;

    /** From {@code from} (an address of the VM's devices) to the server at {@code to}; {@code serverPending} is sampled at each event. */
    RtuWithholdingClient(InetSocketAddress from, InetSocketAddress to, IntSupplier serverPending) {
        this.from = from;
        this.to = to;
        this.serverPending = serverPending;
        LibC.setNonBlocking(fd);
    }

    /** Starts flooding: {@code outstanding} requests open at once, at most {@code requests} in all, for at most {@code time}. */
    void start(int outstanding, int requests, Duration time) {
        long deadline = System.nanoTime() + time.toNanos();
        thread = Thread.ofPlatform().name("rtu-withholder").daemon().start(() -> {
            try {
                while (!stop && System.nanoTime() - deadline < 0) {
                    while (opening && open.size() < outstanding && opened < requests) {
                        openOne();
                    }
                    if (LibC.pollIn(fd, 50, pollfd)) {
                        drain();
                    }
                }
            } catch (RuntimeException e) {
                errors.add(e.toString());
            } finally {
                synchronized (this) {
                    stop = true;
                    notifyAll();
                }
            }
        });
    }

    private void openOne() {
        MemorySegment id = LibRdmacm.createId(channel, RdmaCmId.PS_TCP, arena);
        open.put(id.address(), new long[] {0});
        synchronized (this) {
            opened++;
        }
        try (Arena a = Arena.ofConfined()) {
            LibRdmacm.resolveAddr(id, SockAddr.of(new InetSocketAddress(from.getAddress(), 0), a), SockAddr.of(to, a), 2000);
        }
    }

    private void drain() {
        MemorySegment e;
        while ((e = LibRdmacm.tryGetCmEvent(channel, eventOut)) != null) {
            int type = RdmaCmEvent.event(e);
            MemorySegment id = RdmaCmEvent.id(e).reinterpret(RdmaCmId.LAYOUT.byteSize());
            byte[] data = type == RdmaCmEvent.REJECTED ? RdmaCmEvent.privateData(e) : null;
            int status = RdmaCmEvent.status(e);
            LibRdmacm.ackCmEvent(e);   // before the id may be destroyed
            long[] acceptedAt = open.get(id.address());
            if (acceptedAt == null) {
                continue;
            }
            switch (type) {
                case RdmaCmEvent.ADDR_RESOLVED -> LibRdmacm.resolveRoute(id, 2000);
                case RdmaCmEvent.ROUTE_RESOLVED -> connect(id);
                case RdmaCmEvent.CONNECT_RESPONSE -> {   // the server accepted: its REP; our RTU is never sent
                    acceptedAt[0] = System.nanoTime();
                    synchronized (this) {
                        mostHeld = Math.max(mostHeld, ++held);
                        notifyAll();
                    }
                }
                case RdmaCmEvent.ESTABLISHED -> {
                    synchronized (this) {
                        established++;
                    }
                }
                default -> end(id, acceptedAt[0], type, status, data);
            }
            synchronized (this) {
                mostServerPending = Math.max(mostServerPending, serverPending.getAsInt());
            }
        }
    }

    private void connect(MemorySegment id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(RdmaConnParam.LAYOUT);
            MemorySegment d = a.allocate(privateData.length);
            d.copyFrom(MemorySegment.ofArray(privateData));
            RdmaConnParam.set(p, d, privateData.length, 1, 1, 7, 6);
            // A QP number of no QP of ours, another each time: the server's CM refuses a request that names
            // a (QP number, device) pair it already has a connection with as stale.
            RdmaConnParam.qpNum(p, 0x40000 + ++qpNumbers);
            LibRdmacm.connect(id, p);
        }
    }

    private void end(MemorySegment id, long acceptedAt, int type, int status, byte[] data) {
        open.remove(id.address());
        LibRdmacm.destroyId(id);
        String reason = data == null ? null : Handshake.rejectionReason(data);
        ended.add(new Ended(acceptedAt != 0, acceptedAt == 0 ? 0 : System.nanoTime() - acceptedAt, reason,
                RdmaCmEvent.name(type), status, !opening));
        synchronized (this) {
            if (acceptedAt != 0) {
                held--;
            }
            notifyAll();
        }
    }

    /** Waits until the server holds {@code n} of our requests at once (accepted, no RTU); false on time-out. */
    boolean awaitHeld(int n, Duration timeout) throws InterruptedException {
        return awaitUntil(() -> held >= n, timeout);
    }

    /** Waits until {@code n} more requests than now have ended (the flood churns); false on time-out. */
    boolean awaitMoreEnded(int n, Duration timeout) throws InterruptedException {
        int target = ended.size() + n;
        return awaitUntil(() -> ended.size() >= target, timeout);
    }

    /** Opens no more; waits until every request it opened has ended; false on time-out. */
    boolean stopOpeningAndAwaitAllEnded(Duration timeout) throws InterruptedException {
        opening = false;
        return awaitUntil(() -> ended.size() >= opened, timeout);
    }

    /** Waits on this client's monitor (notified at each change) until {@code done}, the flood's end, or the time-out. */
    private synchronized boolean awaitUntil(java.util.function.BooleanSupplier done, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean() && !stop) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            wait(Math.max(1, left / 1_000_000));
        }
        return done.getAsBoolean();
    }

    /** How the requests ended, counted by event, whether accepted, and reason: for failure messages. */
    String endings() {
        Map<String, Integer> by = new java.util.TreeMap<>();
        for (Ended e : ended) {
            by.merge(e.event() + " status " + e.status() + (e.accepted() ? " after accepted" : " before accepted")
                    + (e.reason() == null ? "" : " (" + e.reason() + ")"), 1, Integer::sum);
        }
        return by.toString();
    }

    synchronized int opened() {
        return opened;
    }

    synchronized int mostHeld() {
        return mostHeld;
    }

    synchronized int mostServerPending() {
        return mostServerPending;
    }

    synchronized int established() {
        return established;
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        if (thread != null) {
            thread.join(10_000);
        }
        for (long address : open.keySet()) {
            LibRdmacm.destroyId(MemorySegment.ofAddress(address).reinterpret(RdmaCmId.LAYOUT.byteSize()));
        }
        open.clear();
        LibRdmacm.destroyEventChannel(channel);
        arena.close();
    }
}
