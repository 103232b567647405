package dev.jrdma;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.os.LibC;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.SharedCompletionSink;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.spi.DeviceEventHandler;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.Provider;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A provider that a test drives: its queue pair records what the connection posts and completes
 * it only when the test says so, with the status and value the test chooses; its connection
 * manager establishes a connect at once, with a jrdma handshake of the test's choosing. So the
 * connection's own logic (slot rings, in-order completion, batch failure, emulated atomics, error
 * mapping, teardown) is tested without a peer, a wire or a clock the test does not control.
 */
final class FakeProvider implements Provider {
    final FakeDevice device = new FakeDevice();
    /** The queue pairs made, in order. */
    final LinkedBlockingQueue<FakeQueuePair> queuePairs = new LinkedBlockingQueue<>();
    /** When set, the connection manager's connect throws it (a failure rdma_resolve_addr reports at once). */
    volatile RuntimeException connectFailure;
    /** Polls and arms of a completion queue after its close: a use after free on a real device. */
    final AtomicInteger completionQueueUsesAfterClose = new AtomicInteger();
    /** The completion queues made, in order. */
    final java.util.List<FakeCompletionQueue> completionQueues = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** The handshake the fake peer answers a connect with. */
    volatile ConnectionConfig peerConfig = ConnectionConfig.defaults();

    @Override
    public String name() {
        return "fake";
    }

    @Override
    public ProviderUnavailableException unavailabilityCause() {
        return null;
    }

    @Override
    public Device open(String deviceName) {
        return device;
    }

    /** A send-queue request as the connection posted it. */
    record Posted(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey,
                  long compareAdd, long swap, int imm) {
        boolean signaled() {
            return (flags & QueuePair.SEND_SIGNALED) != 0;
        }
    }

    /** A posted receive. */
    record PostedReceive(long wrId, long localAddr, int length) {
    }

    final class FakeDevice implements Device {
        private final AtomicInteger keys = new AtomicInteger(0x100);
        final AtomicInteger openRegistrations = new AtomicInteger();

        @Override
        public String name() {
            return "fake0";
        }

        @Override
        public DeviceCapabilities capabilities() {
            return new DeviceCapabilities(16384, 16, 1 << 20, 16, 16, 1L << 40, true, false, false, false);
        }

        @Override
        public MemoryRegistration register(MemorySegment memory, int access) {
            int key = keys.incrementAndGet();
            openRegistrations.incrementAndGet();
            return new MemoryRegistration() {
                private boolean closed;

                @Override
                public MemorySegment memory() {
                    return memory;
                }

                @Override
                public int lkey() {
                    return key;
                }

                @Override
                public int rkey() {
                    return key;
                }

                @Override
                public int access() {
                    return access;
                }

                @Override
                public synchronized void close() {
                    if (!closed) {
                        closed = true;
                        openRegistrations.decrementAndGet();
                    }
                }
            };
        }

        @Override
        public CompletionChannel createCompletionChannel() {
            int fd = LibC.eventFd();
            return new CompletionChannel() {
                @Override
                public int fd() {
                    return fd;
                }

                @Override
                public int drainEvents() {
                    return 0;
                }

                @Override
                public void close() {
                    LibC.close(fd);
                }
            };
        }

        @Override
        public CompletionQueue createCompletionQueue(int depth, CompletionChannel channel) {
            FakeCompletionQueue cq = new FakeCompletionQueue(completionQueueUsesAfterClose);
            completionQueues.add(cq);
            return cq;
        }

        @Override
        public ConnectionManager createConnectionManager() {
            return new FakeConnectionManager();
        }

        /** Set before the Rdma is built: above 0, the connections of an IO thread share completion queues of this many entries, as on verbs. */
        volatile int sharedDepth;

        @Override
        public int sharedCompletionQueueDepth() {
            return sharedDepth;
        }

        @Override
        public int eventFd() {
            return -1;
        }

        /** Where the test delivers device events (the fake has no event channel of its own). */
        volatile DeviceEventHandler events;

        @Override
        public void onEvents(DeviceEventHandler handler) {
            events = handler;
        }

        @Override
        public int pollEvents() {
            return 0;
        }

        @Override
        public void close() {
        }
    }

    /** Completions the test queued, handed to the connection when its IO thread (or an INLINE poll) polls. */
    static final class FakeCompletionQueue implements CompletionQueue {
        private final ConcurrentLinkedQueue<long[]> queue = new ConcurrentLinkedQueue<>();
        private final AtomicInteger usesAfterClose;
        volatile boolean closed;

        FakeCompletionQueue(AtomicInteger usesAfterClose) {
            this.usesAfterClose = usesAfterClose;
        }

        void add(int qpNum, long wrId, int status, int opcode, int byteLen, int imm, boolean withImm) {
            queue.add(new long[] {wrId, status, opcode, byteLen, imm, withImm ? 1 : 0, qpNum});
        }

        /** As a verbs CQ that several queue pairs share: each completion names its queue pair. */
        @Override
        public int pollShared(SharedCompletionSink sink, int max) {
            if (closed) {
                usesAfterClose.incrementAndGet();
            }
            int n = 0;
            long[] c;
            while (n < max && (c = queue.poll()) != null) {
                sink.onCompletion((int) c[6], c[0], (int) c[1], (int) c[2], (int) c[3], (int) c[4], c[5] != 0);
                n++;
            }
            return n;
        }

        @Override
        public int poll(CompletionSink sink, int max) {
            return pollShared((qpNum, wrId, status, opcode, byteLen, imm, withImm)
                    -> sink.onCompletion(wrId, status, opcode, byteLen, imm, withImm), max);
        }

        @Override
        public void arm() {
            if (closed) {
                usesAfterClose.incrementAndGet();
            }
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    final class FakeConnectionManager implements ConnectionManager {
        private final int fd = LibC.eventFd();
        private final ConcurrentLinkedQueue<Consumer<CmEventHandler>> events = new ConcurrentLinkedQueue<>();

        @Override
        public int fd() {
            return fd;
        }

        @Override
        public CmListener listen(InetSocketAddress address, int backlog) {
            throw new UnsupportedOperationException("the fake provider only connects");
        }

        @Override
        public CmEndpoint connect(InetSocketAddress remote, CompletionQueue cq, QueuePairSpec spec, byte[] privateData,
                                  int timeoutMs, QueuePairOwner owner) {
            RuntimeException failure = connectFailure;
            if (failure != null) {
                throw failure;
            }
            FakeQueuePair qp = new FakeQueuePair((FakeCompletionQueue) cq, spec, owner.postMonitor());
            FakeEndpoint endpoint = new FakeEndpoint(qp, remote);
            owner.onQueuePair(qp);
            byte[] accept = Handshake.of(peerConfig).encode();
            events.add(h -> h.onEstablished(endpoint, accept));
            queuePairs.add(qp);
            return endpoint;
        }

        @Override
        public int processEvents(CmEventHandler handler) {
            int n = 0;
            Consumer<CmEventHandler> e;
            while ((e = events.poll()) != null) {
                e.accept(handler);
                n++;
            }
            return n;
        }

        @Override
        public int maxConnectPrivateData() {
            return 56;
        }

        @Override
        public void close() {
            LibC.close(fd);
        }
    }

    static final class FakeEndpoint implements CmEndpoint {
        final FakeQueuePair qp;
        private final InetSocketAddress remote;
        private volatile Object attachment;
        volatile boolean disconnected, closed;

        FakeEndpoint(FakeQueuePair qp, InetSocketAddress remote) {
            this.qp = qp;
            this.remote = remote;
        }

        @Override
        public QueuePair queuePair() {
            return qp;
        }

        @Override
        public InetSocketAddress remoteAddress() {
            return remote;
        }

        @Override
        public InetSocketAddress localAddress() {
            return new InetSocketAddress("127.0.0.1", 1);
        }

        @Override
        public void accept(CompletionQueue cq, QueuePairSpec spec, byte[] privateData, QueuePairOwner owner) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void reject(byte[] privateData) {
        }

        @Override
        public void disconnect() {
            disconnected = true;
        }

        @Override
        public Object attachment() {
            return attachment;
        }

        @Override
        public void attach(Object attachment) {
            this.attachment = attachment;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /**
     * Records every post; completes a request only when the test calls {@link #complete}. Moving
     * to error flushes everything outstanding, signaled or not (as verbs does: a request that ends
     * in error always has a completion).
     */
    static final class FakeQueuePair implements QueuePair {
        private static final AtomicInteger NUMBERS = new AtomicInteger(1);
        final FakeCompletionQueue cq;
        private final QueuePairSpec spec;
        private final Object postMonitor;
        private final int qpNum = NUMBERS.getAndIncrement();
        /** Every request posted, in order, for the test to take. */
        final LinkedBlockingQueue<Posted> sends = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<PostedReceive> receives = new LinkedBlockingQueue<>();
        // Posted and not completed yet (guarded by this).
        private final ArrayDeque<Posted> outstanding = new ArrayDeque<>();
        private final ArrayDeque<PostedReceive> outstandingReceives = new ArrayDeque<>();
        private final Posted[] staged;
        private volatile int state = STATE_RTS;
        /** The next post fails with this errno (0: none); for a chain, at {@link #failAt}. */
        volatile int failErrno;
        volatile int failAt;
        private int firstUnposted;
        final AtomicInteger postsOutsideMonitor = new AtomicInteger();
        /** Unsignaled posts return {@link QueuePair#DONE}, as shm's direct operations do. */
        volatile boolean doneWhenUnsignaled;
        /** What {@code ibv_query_qp} would say (-1: no such setting, as on tcp and shm). */
        volatile int ackTimeout = -1, retryCount = -1, port = -1;

        @Override
        public int queryAckTimeout() {
            return ackTimeout;
        }

        @Override
        public int queryRetryCount() {
            return retryCount;
        }

        @Override
        public int queryPort() {
            return port;
        }

        FakeQueuePair(FakeCompletionQueue cq, QueuePairSpec spec, Object postMonitor) {
            this.cq = cq;
            this.spec = spec;
            this.postMonitor = postMonitor;
            this.staged = new Posted[Math.max(1, spec.sendDepth())];
        }

        @Override
        public int qpNum() {
            return qpNum;
        }

        @Override
        public QueuePairSpec granted() {
            return spec;
        }

        private void checkMonitor() {
            if (!Thread.holdsLock(postMonitor)) {
                postsOutsideMonitor.incrementAndGet();
            }
        }

        @Override
        public int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey,
                            long compareAdd, long swap, int imm) {
            checkMonitor();
            int errno = failErrno;
            if (errno != 0) {
                failErrno = 0;
                return errno;
            }
            Posted p = new Posted(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
            if (doneWhenUnsignaled && !p.signaled() && state != STATE_ERR) {
                sends.add(p);
                return DONE;   // as shm's direct path: carried out now, nothing to report
            }
            synchronized (this) {
                if (state == STATE_ERR) {
                    cq.add(qpNum, wrId, WorkCompletion.WR_FLUSH_ERR, 0, 0, 0, false);
                } else {
                    outstanding.add(p);
                }
            }
            sends.add(p);
            return 0;
        }

        @Override
        public int chainCapacity() {
            return staged.length;
        }

        @Override
        public void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                          int rkey, long compareAdd, long swap, int imm) {
            staged[index] = new Posted(wrId, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, imm);
        }

        @Override
        public int postStaged(int count) {
            checkMonitor();
            int errno = failErrno;
            int stop = errno != 0 ? Math.min(failAt, count) : count;
            failErrno = 0;
            for (int i = 0; i < stop; i++) {
                if (!(doneWhenUnsignaled && !staged[i].signaled())) {   // else done at once: no entry
                    synchronized (this) {
                        outstanding.add(staged[i]);
                    }
                }
                sends.add(staged[i]);
            }
            firstUnposted = stop;
            return errno;
        }

        @Override
        public int firstUnposted() {
            return firstUnposted;
        }

        @Override
        public int postRecv(long wrId, long localAddr, int length, int lkey) {
            checkMonitor();
            PostedReceive r = new PostedReceive(wrId, localAddr, length);
            synchronized (this) {
                if (state == STATE_ERR) {
                    cq.add(qpNum, wrId, WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
                    return 0;
                }
                outstandingReceives.add(r);
            }
            receives.add(r);
            return 0;
        }

        @Override
        public int queryState() {
            return state;
        }

        @Override
        public synchronized void moveToError() {
            if (state == STATE_ERR) {
                return;
            }
            state = STATE_ERR;
            for (Posted p : outstanding) {
                cq.add(qpNum, p.wrId(), WorkCompletion.WR_FLUSH_ERR, 0, 0, 0, false);
            }
            outstanding.clear();
            for (PostedReceive r : outstandingReceives) {
                cq.add(qpNum, r.wrId(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
            }
            outstandingReceives.clear();
        }

        /** The next request the connection posts, waiting up to 5 s for it. */
        Posted nextSend() throws InterruptedException {
            Posted p = sends.poll(5, TimeUnit.SECONDS);
            if (p == null) {
                throw new AssertionError("nothing was posted within 5 s");
            }
            return p;
        }

        /**
         * Completes {@code p} with {@code status}. As RC does, in order: the unsignaled requests
         * posted before it are done with it; a signaled one still outstanding before it is a
         * mistake of the test.
         */
        synchronized void complete(Posted p, int status) {
            if (!outstanding.contains(p)) {
                throw new AssertionError(p + " is not outstanding");
            }
            while (true) {
                Posted head = outstanding.poll();
                if (head == p) {
                    break;
                }
                if (head.signaled()) {
                    throw new AssertionError("completing " + p + " before the signaled " + head + " posted before it");
                }
            }
            cq.add(qpNum, p.wrId(), status, WorkCompletion.opcodeOf(p.opcode()), p.length(), 0, false);
            if (status != WorkCompletion.SUCCESS) {
                moveToError();   // as the device does: a failed request puts the QP in error
            }
        }

        /**
         * Fails {@code p} with {@code status} as {@link #complete} does, but the flushes of the
         * posted receives reach the completion queue first: a device's CQ does not order a QP's
         * send and receive queues (seen on rxe).
         */
        synchronized void failAfterReceiveFlushes(Posted p, int status) {
            for (PostedReceive r : outstandingReceives) {
                cq.add(qpNum, r.wrId(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OP_RECV, 0, 0, false);
            }
            outstandingReceives.clear();
            complete(p, status);   // p's own failure, then the rest of the sends flushed
        }

        /** The unsignaled {@code p} succeeded: done, with no completion (as a device does). */
        synchronized void completeSilently(Posted p) {
            if (p.signaled() || !outstanding.remove(p)) {
                throw new AssertionError(p + " is not an outstanding unsignaled request");
            }
        }

        /** Puts {@code prior} in the landing word of the atomic {@code p}, without completing it (unsignaled). */
        void land(Posted p, long prior) {
            MemorySegment.ofAddress(p.localAddr()).reinterpret(8).set(ValueLayout.JAVA_LONG, 0, prior);
        }

        /** Completes the atomic {@code p} with the prior value {@code prior} in its landing word. */
        void completeAtomic(Posted p, long prior) {
            MemorySegment.ofAddress(p.localAddr()).reinterpret(8).set(ValueLayout.JAVA_LONG, 0, prior);
            complete(p, WorkCompletion.SUCCESS);
        }

        /** Delivers {@code bytes} into the oldest posted receive. */
        void deliver(byte[] bytes) {
            PostedReceive r;
            synchronized (this) {
                r = outstandingReceives.poll();
            }
            if (r == null) {
                throw new AssertionError("no receive posted");
            }
            MemorySegment.copy(bytes, 0, MemorySegment.ofAddress(r.localAddr()).reinterpret(r.length()),
                    ValueLayout.JAVA_BYTE, 0, bytes.length);
            cq.add(qpNum, r.wrId(), WorkCompletion.SUCCESS, WorkCompletion.OP_RECV, bytes.length, 0, false);
        }

        synchronized int outstandingCount() {
            return outstanding.size();
        }

        synchronized List<Posted> outstanding() {
            return new ArrayList<>(outstanding);
        }
    }
}
