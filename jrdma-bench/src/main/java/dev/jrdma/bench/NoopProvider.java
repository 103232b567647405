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
            return new DeviceCapabilities(16384, 16, 1 << 20, 16, 16, 1L << 40, true, false, false, false);
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

    /** The completion queue and the queue pair in one: a ring of the signaled requests' ids and opcodes. */
    private static final class NoopQueue implements CompletionQueue, QueuePair {
        private final long[] ids;
        private final int[] opcodes;
        private final int mask;
        private long head, tail;
        private final QueuePairSpec granted;
        private volatile int state = STATE_RTS;

        NoopQueue(int depth) {
            int capacity = Integer.highestOneBit(Math.max(2, depth)) << 1;
            ids = new long[capacity];
            opcodes = new int[capacity];
            mask = capacity - 1;
            granted = new QueuePairSpec(depth, depth, 1, 1, 0, 16, 16, 7, 7);
        }

        @Override
        public int poll(CompletionSink sink, int max) {
            int n = 0;
            while (n < max && head < tail) {
                int i = (int) head++ & mask;
                sink.onCompletion(ids[i], state == STATE_ERR ? WorkCompletion.WR_FLUSH_ERR : WorkCompletion.SUCCESS,
                        opcodes[i], 8, 0, false);
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

        @Override
        public int postSend(long wrId, int opcode, int flags, long localAddr, int length, int lkey, long remoteAddr,
                            int rkey, long compareAdd, long swap, int imm) {
            if ((flags & SEND_SIGNALED) != 0 || state == STATE_ERR) {
                if (tail - head > mask) {
                    return 12;   // ENOMEM: more outstanding than the queue holds
                }
                int i = (int) tail++ & mask;
                ids[i] = wrId;
                opcodes[i] = WorkCompletion.opcodeOf(opcode);
            }
            return 0;
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
            return 0;
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
