package dev.jrdma.bench;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.os.LibC;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.CompletionSink;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.spi.DeviceEventHandler;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.Provider;
import dev.jrdma.spi.QueuePair;
import dev.jrdma.spi.QueuePairOwner;
import dev.jrdma.spi.QueuePairSpec;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A provider that does nothing but complete: a connect is established at once, and every
 * signaled request completes successfully at the next poll, touching no memory. Benchmarks put
 * it under the library to measure jrdma's own cost per operation (posting, the slot, completion
 * dispatch, the handler call) with no transport at all ({@code provider("noop")}; found through
 * this module's {@code META-INF/services}). It is not a transport: nothing reaches a peer.
 *
 * <p>For one thread: the benchmark posts and polls on the same thread (INLINE), so the
 * completion ring needs no synchronisation, and a poll allocates nothing.
 */
public final class NoopProvider implements Provider {
    @Override
    public String name() {
        return "noop";
    }

    @Override
    public ProviderUnavailableException unavailabilityCause() {
        return null;
    }

    @Override
    public Device open(String deviceName) {
        return new NoopDevice();
    }

    private static final class NoopDevice implements Device {
        private final AtomicInteger keys = new AtomicInteger(1);

        @Override
        public String name() {
            return "noop0";
        }

        @Override
        public DeviceCapabilities capabilities() {
            return new DeviceCapabilities(16384, 16, 1 << 20, 16, 16, 1L << 40, true, false, true, false);
        }

        @Override
        public MemoryRegistration register(MemorySegment memory, int access) {
            int key = keys.incrementAndGet();
            return new MemoryRegistration() {
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
                public void close() {
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
            return new NoopQueue(depth);
        }

        @Override
        public Srq createSrq(int capacity, Runnable onLimit) {
            return new NoopReceives(capacity);
        }

        @Override
        public ConnectionManager createConnectionManager() {
            return new NoopConnections();
        }

        @Override
        public int eventFd() {
            return -1;
        }

        @Override
        public void onEvents(DeviceEventHandler handler) {
        }

        @Override
        public int pollEvents() {
            return 0;
        }

        @Override
        public void close() {
        }
    }

    /**
     * Posted receives, in order: a queue pair's own, or a shared receive queue's. One thread posts
     * and takes (the benchmark's client is INLINE).
     */
    private static final class NoopReceives implements Srq {
        private final long[] ids;
        private final int mask;
        private final int capacity;
        private long head, tail;

        NoopReceives(int capacity) {
            this.capacity = Math.max(1, capacity);
            int size = Integer.highestOneBit(this.capacity) << 1;
            ids = new long[size];
            mask = size - 1;
        }

        @Override
        public int capacity() {
            return capacity;
        }

        @Override
        public int postRecv(long wrId, long localAddr, int length, int lkey) {
            if (tail - head >= capacity) {
                return 12;   // ENOMEM
            }
            ids[(int) tail++ & mask] = wrId;
            return 0;
        }

        /** The oldest receive's id, taken; -1 when none is posted. */
        long take() {
            return head == tail ? -1 : ids[(int) head++ & mask];
        }

        @Override
        public void armLimit(int limit) {
        }

        @Override
        public void close() {
        }
    }

    /**
     * The completion queue and the queue pair in one: a ring of the signaled requests' ids and
     * opcodes. A SEND also lands here, as if the peer were this QP: it takes a posted receive (its
     * own or the shared queue's) and completes it, with the send's length.
     */
    private static final class NoopQueue implements CompletionQueue, QueuePair {
        private final long[] ids;
        private final int[] opcodes;
        private final int[] lengths;
        private NoopReceives receives;
        private final int mask;
        private long head, tail;
        private final QueuePairSpec granted;
        private volatile int state = STATE_RTS;

        NoopQueue(int depth) {
            int capacity = Integer.highestOneBit(Math.max(2, depth)) << 1;
            ids = new long[capacity];
            opcodes = new int[capacity];
            lengths = new int[capacity];
            mask = capacity - 1;
            receives = new NoopReceives(depth);
            granted = new QueuePairSpec(depth, depth, 1, 1, 0, 16, 16, 7, 7);
        }

        @Override
        public int poll(CompletionSink sink, int max) {
            int n = 0;
            while (n < max && head < tail) {
                int i = (int) head++ & mask;
                sink.onCompletion(ids[i], state == STATE_ERR ? WorkCompletion.WR_FLUSH_ERR : WorkCompletion.SUCCESS,
                        opcodes[i], lengths[i], 0, false);
                n++;
            }
            return n;
        }

        @Override
        public void arm() {
        }

        @Override
        public void close() {
        }

        @Override
        public int qpNum() {
            return 1;
        }

        @Override
        public QueuePairSpec granted() {
            return granted;
        }

        /** An unsignaled WRITE or READ with nothing before it outstanding is done at once (it moves nothing), as shm's direct path. */
        @Override
        public int postNow(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr, int rkey) {
            boolean done = (opcode == WR_RDMA_WRITE || opcode == WR_RDMA_READ) && (flags & SEND_SIGNALED) == 0
                    && state != STATE_ERR && tail == head;
            return done ? DONE : NOT_NOW;
        }

        @Override
        public int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                            int rkey, long compareAdd, long swap, int imm) {
            if ((flags & SEND_SIGNALED) != 0 || state == STATE_ERR) {
                if (tail - head > mask) {
                    return 12;   // ENOMEM: more outstanding than the queue holds
                }
                complete(wrId, WorkCompletion.opcodeOf(opcode), 8);
            }
            if (opcode == WR_SEND && state != STATE_ERR) {
                long recv = receives.take();
                if (recv >= 0 && tail - head <= mask) {
                    complete(recv, WorkCompletion.OP_RECV, length);
                }
            }
            return 0;
        }

        private void complete(long wrId, int opcode, int length) {
            int i = (int) tail++ & mask;
            ids[i] = wrId;
            opcodes[i] = opcode;
            lengths[i] = length;
        }

        /** The queue pair takes its receives from a shared queue. */
        void shareReceives(Srq srq) {
            receives = (NoopReceives) srq;
        }

        @Override
        public int chainCapacity() {
            return 1;
        }

        @Override
        public void stage(int index, long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                          int rkey, long compareAdd, long swap, int imm) {
            throw new UnsupportedOperationException("the noop provider posts no chains");
        }

        @Override
        public int postStaged(int count) {
            throw new UnsupportedOperationException("the noop provider posts no chains");
        }

        @Override
        public int firstUnposted() {
            return 0;
        }

        @Override
        public int postRecv(long wrId, long localAddr, int length, int lkey) {
            return receives.postRecv(wrId, localAddr, length, lkey);
        }

        @Override
        public int queryState() {
            return state;
        }

        @Override
        public void moveToError() {
            state = STATE_ERR;
        }
    }

    /** Establishes every connect at its next look at the events. */
    private static final class NoopConnections implements ConnectionManager {
        private final int fd = LibC.eventFd();
        private volatile CmEndpoint established;

        @Override
        public int fd() {
            return fd;
        }

        @Override
        public CmListener listen(InetSocketAddress address, int backlog) {
            throw new UnsupportedOperationException("the noop provider only connects");
        }

        @Override
        public CmEndpoint connect(InetSocketAddress remote, CompletionQueue cq, QueuePairSpec spec, byte[] privateData,
                                  int timeoutMs, QueuePairOwner owner) {
            NoopQueue q = (NoopQueue) cq;
            if (owner.srq() != null) {
                q.shareReceives(owner.srq());
            }
            CmEndpoint e = new CmEndpoint() {
                private Object attachment;

                @Override
                public QueuePair queuePair() {
                    return q;
                }

                @Override
                public InetSocketAddress remoteAddress() {
                    return remote;
                }

                @Override
                public InetSocketAddress localAddress() {
                    return remote;
                }

                @Override
                public void accept(CompletionQueue c, QueuePairSpec s, byte[] p, QueuePairOwner o) {
                    throw new UnsupportedOperationException();
                }

                @Override
                public void reject(byte[] p) {
                }

                @Override
                public void disconnect() {
                }

                @Override
                public Object attachment() {
                    return attachment;
                }

                @Override
                public void attach(Object a) {
                    attachment = a;
                }

                @Override
                public void close() {
                }
            };
            owner.onQueuePair(q);
            established = e;
            return e;
        }

        @Override
        public int processEvents(CmEventHandler handler) {
            CmEndpoint e = established;
            if (e == null) {
                return 0;
            }
            established = null;
            handler.onEstablished(e, new byte[0]);
            return 1;
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
}
