package dev.jrdma;

import dev.jrdma.device.DeviceCapabilities;

import java.time.Duration;
import java.util.Objects;

/**
 * How a connection is set up: queue depths, receive buffers, RDMA read/atomic depth, retries,
 * time-out, and what travels in the connection request. {@link #defaults()} suits most uses;
 * {@link #builder()} changes single values. Values are checked when built (ranges) and again
 * against the device when a connection is made (limits), naming the field and the limit.
 */
public final class ConnectionConfig {
    /** Bytes of the connection request jrdma's own header takes (magic, receive buffer size and count, lengths). */
    static final int HEADER_BYTES = 12;
    /** rdma_cm carries 56 bytes with a connect request on RoCE/IB. */
    static final int MAX_REQUEST_PRIVATE_DATA = 56;

    private final int sendQueueDepth;
    private final int receiveQueueDepth;
    private final int receiveBufferSize;
    private final int maxInlineData;
    private final int maxRdAtomic;
    private final Duration timeout;
    private final int retryCount;
    private final int rnrRetry;
    private final int ackTimeout;
    private final int minRnrTimer;
    private final int trafficClass;
    private final int serviceLevel;
    private final int flowLabel;
    private final SharedReceiveQueue sharedReceiveQueue;
    private final byte[] privateData;
    private final byte[] authToken;
    private final ReconnectPolicy reconnect;
    private final ConnectionListener listener;

    private ConnectionConfig(Builder b) {
        sendQueueDepth = b.sendQueueDepth;
        receiveQueueDepth = b.receiveQueueDepth;
        receiveBufferSize = b.receiveBufferSize;
        maxInlineData = b.maxInlineData;
        maxRdAtomic = b.maxRdAtomic;
        timeout = b.timeout;
        retryCount = b.retryCount;
        rnrRetry = b.rnrRetry;
        ackTimeout = b.ackTimeout;
        minRnrTimer = b.minRnrTimer;
        trafficClass = b.trafficClass;
        serviceLevel = b.serviceLevel;
        flowLabel = b.flowLabel;
        sharedReceiveQueue = b.sharedReceiveQueue;
        privateData = b.privateData.clone();
        authToken = b.authToken.clone();
        reconnect = b.reconnect;
        listener = b.listener;
    }

    private static final ConnectionConfig DEFAULTS = builder().build();

    /**
     * {@return the defaults of every value: the config {@code connect} and {@code listen} use when given
     * none}
     */
    public static ConnectionConfig defaults() {
        return DEFAULTS;
    }

    /**
     * A builder that starts from the defaults.
     *
     * @return this builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder starting from these values.
     *
     * @return this builder
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.sendQueueDepth = sendQueueDepth;
        b.receiveQueueDepth = receiveQueueDepth;
        b.receiveBufferSize = receiveBufferSize;
        b.maxInlineData = maxInlineData;
        b.maxRdAtomic = maxRdAtomic;
        b.timeout = timeout;
        b.retryCount = retryCount;
        b.rnrRetry = rnrRetry;
        b.ackTimeout = ackTimeout;
        b.minRnrTimer = minRnrTimer;
        b.trafficClass = trafficClass;
        b.serviceLevel = serviceLevel;
        b.flowLabel = flowLabel;
        b.sharedReceiveQueue = sharedReceiveQueue;
        b.privateData = privateData.clone();
        b.authToken = authToken.clone();
        b.reconnect = reconnect;
        b.listener = listener;
        return b;
    }

    /**
     * Send-queue work requests: operations in flight at once on the connection. Default 128.
     *
     * @return work requests in flight on the send queue
     */
    public int sendQueueDepth() {
        return sendQueueDepth;
    }

    /**
     * {@return receives kept posted (each a pooled buffer of {@link #receiveBufferSize()})} Default 64.
     * With a {@linkplain #sharedReceiveQueue() shared receive queue}: the most it can hold, shared with
     * every connection using it.
     */
    public int receiveQueueDepth() {
        return sharedReceiveQueue != null ? sharedReceiveQueue.capacity() : receiveQueueDepth;
    }

    /**
     * {@return the largest message this side receives} Default 4096. With a {@linkplain
     * #sharedReceiveQueue() shared receive queue}: its buffer size.
     */
    public int receiveBufferSize() {
        return sharedReceiveQueue != null ? sharedReceiveQueue.bufferSize() : receiveBufferSize;
    }

    /**
     * {@return the shared receive queue the connection's messages arrive in, or null (the default)
     * for receive buffers of its own} See {@link Rdma#sharedReceiveQueue(int, int, int)}.
     */
    public SharedReceiveQueue sharedReceiveQueue() {
        return sharedReceiveQueue;
    }

    /** {@return bytes a send or write may carry inline in the work request} Default 0 (none). */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * {@return RDMA reads/atomics in flight each way; -1 (the default): the device maximum, capped at 255
     * by rdma_cm}
     */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    /**
     * {@return how long connecting may take, and how long an operation waits for room in the send queue}
     * Default 10 s.
     */
    public Duration timeout() {
        return timeout;
    }

    /**
     * {@return transport retries before an operation fails with IBV_WC_RETRY_EXC_ERR (0-7)} Default 7.
     * <p>On verbs, rdma_cm (IB CM) carries it in the connection request, and both ends' queue pairs take
     * the <i>client's</i> value: a server's setting is not applied. The value each QP applies is in {@link
     * Connection#queuePair()}.
     */
    public int retryCount() {
        return retryCount;
    }

    /**
     * Receiver-not-ready retries (0-6). Default 6. 7 means "forever" and is refused.
     *
     * <p>On verbs this is how patient the <i>peer</i> must be with this side: rdma_cm (IB CM)
     * carries it in the request and in the reply, and each end's QP applies the value the other
     * end sent (the receiver says how long senders retry into its empty receive queue). So the
     * client's own sends retry as often as the server's config says, and the server's as the
     * client's says. The value each QP applies is in {@link Connection#queuePair()}.
     *
     * @return retries of a send that finds no receive posted at the peer, 0 to 6
     */
    public int rnrRetry() {
        return rnrRetry;
    }

    /**
     * {@return the local ack timeout exponent on verbs: a request not acknowledged within 4.096 µs ×
     * 2<sup>n</sup> is sent again, up to {@link #retryCount()} times} -1 (the default) leaves it to
     * rdma_cm, which derives it from the path (measured on Soft-RoCE: 19, 2.1 s). A lossy link (Soft-RoCE
     * under load) with a long timeout stalls for that long on every dropped packet; perftest uses 14 (67
     * ms). The tcp and shm transports ignore it. {@link Connection#queuePair()} reports what the device
     * applied.
     */
    public int ackTimeout() {
        return ackTimeout;
    }

    /**
     * On verbs, how long a peer whose SEND found no receive posted here waits before sending it
     * again (each wait counts against its {@link #rnrRetry()}), in the IB encoding: 1 is 0.01 ms,
     * 12 is 0.64 ms (perftest's), 18 is 5.12 ms, 31 is 491.52 ms, and 0 is 655.36 ms. -1 (the
     * default) leaves rdma_cm's, which is 0: with the default 6 retries a receiver has about 4.6 s
     * to post a receive. A short timer finds a posted receive sooner, and gives up sooner. The
     * tcp and shm transports ignore it (their RNR wait is fixed). {@link Connection#queuePair()}
     * reports what the device applied.
     *
     * @return the RNR timer code, or -1 for rdma_cm's own
     */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    /**
     * The traffic class of the connection's packets: the IPv4 TOS byte or the IPv6 traffic class,
     * that is the DSCP in its upper six bits and ECN in the lower two (DSCP 26, AF31, is 104, and
     * DSCP 46, EF, is 184). On RoCE it is what the switches' QoS and PFC classify on, the lossless
     * class of a RoCE network included; -1 (the default) leaves the system's (rdma_cm's per-port
     * default, 0 unless set in its configfs; a socket's 0).
     *
     * <p>Who applies it: on verbs, the side that connects. rdma_cm sets it on the connection's
     * path ({@code RDMA_OPTION_ID_TOS}) and the connection request carries it, so the accepting
     * side's queue pair uses the client's class too, whatever its own config says. On rxe and RoCE
     * NICs rdma_cm also derives the service level from it (the netdev's priority map). On tcp each
     * side marks the packets it sends with its own config's class ({@code IP_TOS} / {@code
     * IPV6_TCLASS}); shm moves data through shared memory, and the class marks only the socket that
     * sets it up. {@link Connection#queuePair()} reports the class each queue pair applies.
     *
     * @return the traffic class, 0 to 255, or -1 for the system's
     */
    public int trafficClass() {
        return trafficClass;
    }

    /**
     * The service level (0-15) of the connection's path, or -1 (the default) for the connection
     * manager's. On RoCE the service level is the packets' Ethernet priority (the VLAN PCP a NIC
     * tags them with, and the class PFC pauses), which rdma_cm otherwise derives from the traffic
     * class through a VLAN device's egress priority map (0 without one); on InfiniBand it is the
     * virtual lane the subnet manager maps it to.
     *
     * <p>Who applies it: on verbs, the side that connects, like {@link #trafficClass()}: with a
     * service level or a {@link #flowLabel()} set, jrdma gives rdma_cm the connection's path itself
     * ({@code RDMA_OPTION_IB_PATH}, RoCE ports only: on an InfiniBand port the subnet manager's path
     * is the one to use, and the connect fails naming the port) instead of letting it resolve one,
     * and the connection request carries it, so the accepting side's queue pair uses it too; an
     * accepting side's own setting is not used. {@link Connection#queuePair()} reports the service
     * level the device keeps: rxe does not keep one (it reports 0, and the request on the wire
     * carries the level). tcp and shm have no service level and ignore it ({@link
     * QueuePairInfo#serviceLevel()} is -1 there).
     *
     * @return the service level, 0 to 15, or -1 for the connection manager's
     */
    public int serviceLevel() {
        return serviceLevel;
    }

    /**
     * The GRH flow label (20 bits) of the connection's packets, or -1 (the default) for the
     * connection manager's (rdma_cm's is a hash of the two ports). On RoCE v2 the flow label
     * chooses the packets' UDP source port ({@code 0xC000 | (label & 0x3FFF) ^ (label >> 14)}),
     * which is what switches hash on to spread connections over equal-cost paths (ECMP); a chosen
     * label pins a connection to one path, or spreads a set of them on purpose. Label 0 is "none":
     * the device then derives the port from the two QP numbers, so it differs per direction and
     * per connection (rxe and mlx5 do so). Applied by the
     * connecting side as {@link #serviceLevel()} is (on verbs, and only on RoCE ports); tcp and shm
     * ignore it ({@link QueuePairInfo#flowLabel()} is -1 there).
     *
     * @return the flow label, 0 to 0xFFFFF, or -1 for the connection manager's
     */
    public int flowLabel() {
        return flowLabel;
    }

    /**
     * {@return Application bytes sent with the connection request (the peer sees them in its accept
     * callback)}
     */
    public byte[] privateData() {
        return privateData.clone();
    }

    /** {@return a token the server must be configured with; empty: none} */
    public byte[] authToken() {
        return authToken.clone();
    }

    /**
     * Whether and how a client connection connects again after it failed; {@link ReconnectPolicy#NEVER} by default.
     *
     * @return the new policy
     */
    public ReconnectPolicy reconnect() {
        return reconnect;
    }

    /**
     * Who hears of failures and reconnects; {@link ConnectionListener#NONE} by default.
     *
     * @return the reconnect listener; {@link ConnectionListener#NONE} when none was given
     */
    public ConnectionListener listener() {
        return listener;
    }

    byte[] privateDataRef() {
        return privateData;
    }

    byte[] authTokenRef() {
        return authToken;
    }

    /** The depth rdma_cm is asked for: the configured one, or the device's (at most 255). */
    int rdAtomicFor(DeviceCapabilities caps) {
        int device = Math.min(255, Math.min(caps.maxQpRdAtomic(), caps.maxQpInitRdAtomic()));
        return maxRdAtomic < 0 ? device : maxRdAtomic;
    }

    /**
     * Checks the values against a device's limits.
     *
     * @throws IllegalArgumentException naming the field, the value and the device's limit
     */
    void validateFor(DeviceCapabilities caps, String device) {
        // One entry more than asked: the teardown's marker after unsignaled requests.
        check("sendQueueDepth + 1", sendQueueDepth + 1L, caps.maxQpWr(), device, "max_qp_wr");
        if (sharedReceiveQueue == null) {
            check("receiveQueueDepth", receiveQueueDepth, caps.maxQpWr(), device, "max_qp_wr");
        }
        // With a shared receive queue, every one of its receives may complete on this connection's CQ.
        check("sendQueueDepth + 1 + receiveQueueDepth", sendQueueDepth + 1L + receiveQueueDepth(), caps.maxCqe(), device,
                "max_cqe");
        int rd = Math.min(255, Math.min(caps.maxQpRdAtomic(), caps.maxQpInitRdAtomic()));
        if (maxRdAtomic > rd) {
            throw new IllegalArgumentException("maxRdAtomic " + maxRdAtomic + " exceeds " + device
                    + "'s limit " + rd + " (max_qp_rd_atom / max_qp_init_rd_atom, at most 255)");
        }
    }

    private static void check(String field, long value, long limit, String device, String capName) {
        if (value > limit) {
            throw new IllegalArgumentException(field + " " + value + " exceeds " + device + "'s limit " + limit
                    + " (" + capName + ")");
        }
    }

    @Override
    public String toString() {
        return "ConnectionConfig[sendQueueDepth=" + sendQueueDepth + ", receiveQueueDepth=" + receiveQueueDepth
                + ", receiveBufferSize=" + receiveBufferSize + ", maxInlineData=" + maxInlineData + ", maxRdAtomic="
                + (maxRdAtomic < 0 ? "device" : maxRdAtomic) + ", timeout=" + timeout + ", retryCount=" + retryCount
                + ", rnrRetry=" + rnrRetry + ", ackTimeout=" + (ackTimeout < 0 ? "cm" : ackTimeout)
                + ", minRnrTimer=" + (minRnrTimer < 0 ? "cm" : minRnrTimer)
                + (trafficClass < 0 ? "" : ", trafficClass=" + trafficClass)
                + (serviceLevel < 0 ? "" : ", serviceLevel=" + serviceLevel)
                + (flowLabel < 0 ? "" : ", flowLabel=0x" + Integer.toHexString(flowLabel))
                + (sharedReceiveQueue == null ? "" : ", sharedReceiveQueue=" + sharedReceiveQueue) + ", privateData="
                + privateData.length + " bytes, authToken="
                + (authToken.length == 0 ? "none" : authToken.length + " bytes")
                + (reconnect.reconnects() ? ", reconnect=" + reconnect : "") + "]";
    }

    /** Values are range-checked as they are set; {@link #build()} checks what depends on several. */
    public static final class Builder {
        private int sendQueueDepth = 128;
        private int receiveQueueDepth = 64;
        private int receiveBufferSize = 4096;
        private int maxInlineData = 0;
        private int maxRdAtomic = -1;
        private Duration timeout = Duration.ofSeconds(10);
        private int retryCount = 7;
        private int rnrRetry = 6;
        private int ackTimeout = -1;
        private int minRnrTimer = -1;
        private int trafficClass = -1;
        private int serviceLevel = -1;
        private int flowLabel = -1;
        private SharedReceiveQueue sharedReceiveQueue;
        private byte[] privateData = new byte[0];
        private byte[] authToken = new byte[0];
        private ReconnectPolicy reconnect = ReconnectPolicy.NEVER;
        private ConnectionListener listener = ConnectionListener.NONE;

        private Builder() {
        }

        private static int range(String field, int value, int min, int max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(field + " must be in " + min + ".." + max + ", not " + value);
            }
            return value;
        }

        /**
         * Work requests in flight on the send queue, 1 to 2<sup>20</sup> (at most the device's
         * max_qp_wr). Default 128.
         *
         * @param n work requests in flight
         * @return this builder
         */
        public Builder sendQueueDepth(int n) {
            sendQueueDepth = range("sendQueueDepth", n, 1, 1 << 20);
            return this;
        }

        /**
         * Receives kept posted, 1 to 2<sup>20</sup>. Default 64.
         *
         * @param n receives kept posted
         * @return this builder
         */
        public Builder receiveQueueDepth(int n) {
            receiveQueueDepth = range("receiveQueueDepth", n, 1, 1 << 20);
            return this;
        }

        /**
         * The largest message this side receives, 1 byte to 1 GiB; each posted receive is a buffer
         * this big. Default 4096.
         *
         * @param bytes the largest message, in bytes
         * @return this builder
         */
        public Builder receiveBufferSize(int bytes) {
            receiveBufferSize = range("receiveBufferSize", bytes, 1, 1 << 30);
            return this;
        }

        /**
         * Bytes a send or write may carry inline in the work request, 0 to 4096. Default 0.
         *
         * @param bytes bytes, 0 to 4096
         * @return this builder
         */
        public Builder maxInlineData(int bytes) {
            maxInlineData = range("maxInlineData", bytes, 0, 4096);
            return this;
        }

        /**
         * -1: the device maximum.
         *
         * @param n RDMA reads and atomics in flight each way, or -1 for the device maximum
         * @return this builder
         */
        public Builder maxRdAtomic(int n) {
            maxRdAtomic = range("maxRdAtomic", n, -1, 255);
            return this;
        }

        /**
         * How long connecting may take, and how long an operation waits for room in the send queue;
         * positive, under 24 days. Default 10 s.
         *
         * @param t the time, positive and under 24 days
         * @return this builder
         */
        public Builder timeout(Duration t) {
            Objects.requireNonNull(t, "timeout");
            if (t.isNegative() || t.isZero() || t.toMillis() > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("timeout must be positive and under 24 days, not " + t);
            }
            timeout = t;
            return this;
        }

        /**
         * Transport retries before an operation fails with IBV_WC_RETRY_EXC_ERR, 0 to 7 (see {@link
         * ConnectionConfig#retryCount()}). Default 7.
         *
         * @param n transport retries, 0 to 7
         * @return this builder
         */
        public Builder retryCount(int n) {
            retryCount = range("retryCount", n, 0, 7);
            return this;
        }

        /**
         * Retries of a send that finds no receive posted at the peer, 0 to 6; 7 ("forever") is refused
         * (see {@link ConnectionConfig#rnrRetry()}). Default 6.
         *
         * @param n retries of a send the peer has no receive for, 0 to 6
         * @return this builder
         */
        public Builder rnrRetry(int n) {
            if (n == 7) {
                throw new IllegalArgumentException("rnrRetry 7 means 'retry forever' in verbs: a peer that stops "
                        + "posting receives would hang the sender for good; use 0-6 (6: the most retries)");
            }
            rnrRetry = range("rnrRetry", n, 0, 6);
            return this;
        }

        /**
         * 1-31 (4.096 µs × 2<sup>n</sup>), or -1 for rdma_cm's own; 0, "never", is refused.
         *
         * @param exponent 1 to 31, or -1 for rdma_cm's own
         * @return this builder
         */
        public Builder ackTimeout(int exponent) {
            if (exponent == 0) {
                throw new IllegalArgumentException("ackTimeout 0 means 'never time out' in verbs: a lost packet would "
                        + "hang the connection for good; use 1-31 (4.096 us x 2^n; perftest uses 14) or -1 for rdma_cm's");
            }
            ackTimeout = range("ackTimeout", exponent, -1, 31);
            return this;
        }

        /**
         * 0-31 in the IB encoding (0: 655.36 ms, 12: 0.64 ms), or -1 for rdma_cm's own (0).
         *
         * @param code 0 to 31 in the IB encoding, or -1 for rdma_cm's own
         * @return this builder
         */
        public Builder minRnrTimer(int code) {
            minRnrTimer = range("minRnrTimer", code, -1, 31);
            return this;
        }

        /**
         * The traffic class (DSCP &lt;&lt; 2 | ECN), 0 to 255, or -1 for the system's (see {@link
         * ConnectionConfig#trafficClass()}). Default -1.
         *
         * @param tos the IPv4 TOS / IPv6 traffic class byte, or -1
         * @return this builder
         */
        public Builder trafficClass(int tos) {
            trafficClass = range("trafficClass", tos, -1, 255);
            return this;
        }

        /**
         * The service level, 0 to 15, or -1 for the connection manager's (see {@link
         * ConnectionConfig#serviceLevel()}). Default -1.
         *
         * @param sl the service level, or -1
         * @return this builder
         */
        public Builder serviceLevel(int sl) {
            serviceLevel = range("serviceLevel", sl, -1, 15);
            return this;
        }

        /**
         * The GRH flow label, 0 to 0xFFFFF, or -1 for the connection manager's (see {@link
         * ConnectionConfig#flowLabel()}). Default -1.
         *
         * @param label the 20-bit flow label, or -1
         * @return this builder
         */
        public Builder flowLabel(int label) {
            flowLabel = range("flowLabel", label, -1, 0xFFFFF);
            return this;
        }

        /**
         * Receives the connection's messages in a shared receive queue's buffers instead of
         * {@link #receiveQueueDepth(int)} buffers of its own; null (the default) for its own. The
         * queue must be of the {@link Rdma} that connects or listens with this config, and open.
         * Its {@linkplain SharedReceiveQueue#bufferSize() buffer size} becomes this side's largest
         * message, as the peer is told.
         *
         * @param queue the shared receive queue, or null
         * @return this builder
         */
        public Builder sharedReceiveQueue(SharedReceiveQueue queue) {
            sharedReceiveQueue = queue;
            return this;
        }

        /**
         * Application bytes sent with the connection request, or with the accept on a server
         * (copied). With the auth token, at most 44 bytes: what rdma_cm carries after jrdma's header.
         *
         * @param data the bytes
         * @return this builder
         */
        public Builder privateData(byte[] data) {
            privateData = Objects.requireNonNull(data, "privateData").clone();
            return this;
        }

        /**
         * A shared secret a client must present to connect (copied); empty: none. Sent in clear: it
         * keeps other clients out, it does not protect data.
         *
         * @param token the secret (copied); empty: none
         * @return this builder
         */
        public Builder authToken(byte[] token) {
            authToken = Objects.requireNonNull(token, "authToken").clone();
            return this;
        }

        /**
         * After the connection fails (the peer leaves, the link or an operation fails), connect
         * again to the same address with this config, as {@code policy} says. For client
         * connections ({@code Rdma.connect}); a server's accepted connections do not reconnect,
         * their client does. The first connect is not retried: it fails as without a policy.
         *
         * <p>The {@link Connection} stays the same object: while it is down operations fail at
         * once with a {@code ConnectionClosedException} and its state is
         * {@link ConnectionState#CONNECTING}; once connected again they run on the new queue pair.
         * Nothing is replayed: what was outstanding at the failure failed, each exactly once.
         * Remote descriptors the peer sent stay usable if the peer kept those regions (a peer
         * that restarted has new ones). Closing the connection stops the reconnecting.
         *
         * @param policy when and how often to connect again
         * @return this builder
         */
        public Builder reconnect(ReconnectPolicy policy) {
            return reconnect(policy, listener);
        }

        /**
         * {@link #reconnect(ReconnectPolicy)}, telling {@code listener} of each failure, attempt, reconnect and the end.
         *
         * @param policy when and how often to connect again
         * @param listener told of each change, on the IO thread
         * @return this builder
         */
        public Builder reconnect(ReconnectPolicy policy, ConnectionListener listener) {
            this.reconnect = Objects.requireNonNull(policy, "policy");
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * The config, its values checked together.
         *
         * @return the config
         * @throws IllegalArgumentException when token and private data do not fit a connection request
         */
        public ConnectionConfig build() {
            int room = MAX_REQUEST_PRIVATE_DATA - HEADER_BYTES;
            if (privateData.length + authToken.length > room) {
                throw new IllegalArgumentException("privateData (" + privateData.length + " bytes) and authToken ("
                        + authToken.length + " bytes) must fit the " + room
                        + " bytes a connection request has room for");
            }
            return new ConnectionConfig(this);
        }
    }
}
