package dev.jrdma.provider.tcp;

import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.os.Errno;
import dev.jrdma.os.SockAddr;
import dev.jrdma.os.Sockets;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.DatagramPeer;
import dev.jrdma.spi.DatagramQueuePair;
import dev.jrdma.spi.DatagramSenderTable;
import dev.jrdma.spi.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Datagrams of the tcp and shm providers: a UDP socket, watched in the IO thread's epoll set.
 * What UD gives is kept: a datagram arrives whole or not at all, a send completes when the
 * socket took it, a datagram that finds no posted receive waits in the socket's buffer and is
 * dropped by the kernel when that fills (UD drops it at once), and one larger than the posted
 * buffers is dropped.
 *
 * <p>A multicast group is a second socket bound to the group's address at {@link #MULTICAST_PORT}
 * (with SO_REUSEADDR, so every member on the host binds it) that joined the group on the
 * interface of the endpoint's address; every endpoint sends to a group at that port, so a
 * group is named by its address alone, as on verbs. Sends to a group leave through that
 * interface and loop back to members on this host (IP_MULTICAST_LOOP), the sender among them
 * when it is a member, as rxe does. An interface without the MULTICAST flag (Linux's {@code lo}
 * by default) cannot: joining is then refused by name.
 *
 * <p>A peer is its socket address, as bytes on the heap: nothing native, so a sender evicted
 * from the table (the least recently seen of {@code maxPeers}) holds nothing to free and stays
 * good to send to for as long as the application keeps it. Each send copies its peer's address
 * into its own slot's native sockaddr, which the kernel reads.
 */
final class TcpDatagramQueuePair implements DatagramQueuePair {
    /** Room before the payload for the sender's sockaddr (28 bytes for IPv6), 40 like verbs' GRH. */
    static final int HEADER = 40;
    /**
     * The largest payload: 4096, the largest RoCE MTU, so that code written against tcp fits a
     * verbs port of that MTU (UDP itself would take 65507).
     */
    static final int MAX_MESSAGE = 4096;
    /** The UDP port every member of a multicast group receives the group's datagrams at. */
    static final int MULTICAST_PORT = 24791;
    /** Room for one sockaddr (sockaddr_in6 is 28 bytes), 8-aligned. */
    private static final int SOCKADDR = 32;
    private static final Consumer<TcpDatagramPeer> NOTHING_TO_FREE = p -> { };

    private final TcpRegistrations registrations;
    private final TcpCompletionChannel channel;
    private final int fd;
    private final InetSocketAddress local;
    private final Arena arena = Arena.ofShared();
    private final int sendDepth;
    private final int recvDepth;
    /** Posted receives, a ring; guarded by {@link #recvLock}. */
    private final long[] recvIds;
    private final long[] recvAddrs;
    private final int[] recvLens;
    private int recvHead;
    private int recvCount;
    private final Object recvLock = new Object();
    /** Sends in flight, a ring in post order; {@code sendDone[i]} ≥ 0 once slot i has its status. Guarded by this. */
    private final long[] sendIds;
    private final long[] sendAddrs;
    private final int[] sendLens;
    /** Slot i's destination, copied from its peer at the post: {@link #SOCKADDR} bytes a slot. */
    private final MemorySegment sendSockaddrs;
    private final int[] sendSockaddrLens;
    private final int[] sendStatus;
    private int sendHead;
    private int sendCount;
    /** Copies of finished sends handed to the sink outside the lock (poll's thread only). */
    private final long[] doneIds;
    private final int[] doneStatus;
    /** Sockets read by {@link #poll}: the endpoint's, then one per joined group (copy on write). */
    private volatile int[] readFds;
    /** The epoll events each socket is watched for now; guarded by {@link #recvLock}. */
    private int watching;
    private final MemorySegment fromLen = arena.allocate(ValueLayout.JAVA_INT);
    /** Where a new peer's sockaddr is built before it is copied to the heap; guarded by this. */
    private final SegmentAllocator sockaddrScratch = SegmentAllocator.prefixAllocator(arena.allocate(SOCKADDR, 8));
    /** Senders of received datagrams, by address; guarded by this. */
    private final DatagramSenderTable<InetSocketAddress, TcpDatagramPeer> senders =
            new DatagramSenderTable<>(NOTHING_TO_FREE);
    private final Map<InetAddress, Integer> groups = new HashMap<>();
    private volatile boolean closed;

    TcpDatagramQueuePair(TcpRegistrations registrations, TcpCompletionChannel channel, InetSocketAddress bind,
                         int sendDepth, int recvDepth) {
        this.registrations = registrations;
        this.channel = channel;
        this.sendDepth = sendDepth;
        this.recvDepth = recvDepth;
        recvIds = new long[recvDepth];
        recvAddrs = new long[recvDepth];
        recvLens = new int[recvDepth];
        sendIds = new long[sendDepth];
        sendAddrs = new long[sendDepth];
        sendLens = new int[sendDepth];
        sendSockaddrs = arena.allocate((long) SOCKADDR * sendDepth, 8);
        sendSockaddrLens = new int[sendDepth];
        sendStatus = new int[sendDepth];
        doneIds = new long[sendDepth];
        doneStatus = new int[sendDepth];
        fd = Sockets.datagramSocketFor(bind);
        try {
            Sockets.bind(fd, bind);
            local = Sockets.localAddress(fd);
            channel.watch(fd, 0, true);
        } catch (RuntimeException e) {
            Sockets.close(fd);
            arena.close();
            throw e;
        }
        readFds = new int[] {fd};
    }

    @Override
    public int headerBytes() {
        return HEADER;
    }

    @Override
    public int maxMessageSize() {
        return MAX_MESSAGE;
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
    }

    @Override
    public int sendDepth() {
        return sendDepth;
    }

    @Override
    public int postRecv(long wrId, long localAddr, int length, int lkey) {
        if (length < HEADER || registrations.check(lkey, localAddr, length, AccessFlags.LOCAL_WRITE, null) == null) {
            return Errno.EINVAL;
        }
        synchronized (recvLock) {
            if (closed) {
                return Errno.EINVAL;
            }
            if (recvCount == recvDepth) {
                return Errno.ENOMEM;
            }
            int i = (recvHead + recvCount) % recvDepth;
            recvIds[i] = wrId;
            recvAddrs[i] = localAddr;
            recvLens[i] = length;
            if (recvCount++ == 0) {
                watch(Sockets.EPOLLIN);
            }
        }
        return 0;
    }

    /** Watches every socket for {@code events} (only EPOLLIN matters: sends never wait); under recvLock. */
    private void watch(int events) {
        if (watching == events || closed) {
            return;
        }
        watching = events;
        for (int s : readFds) {
            channel.watch(s, events, false);
        }
    }

    @Override
    public int postSend(long wrId, long localAddr, int length, int lkey, DatagramPeer to) {
        if (!(to instanceof TcpDatagramPeer peer) || peer.owner != this) {
            return Errno.EINVAL;
        }
        if (length > MAX_MESSAGE || length > 0
                && registrations.check(lkey, localAddr, length, 0, null) == null) {
            return Errno.EINVAL;
        }
        synchronized (this) {
            if (closed) {
                return Errno.EINVAL;
            }
            if (sendCount == sendDepth) {
                return Errno.ENOMEM;
            }
            int i = (sendHead + sendCount++) % sendDepth;
            sendIds[i] = wrId;
            sendAddrs[i] = localAddr;
            sendLens[i] = length;
            MemorySegment.copy(peer.sockaddr, 0, sendSockaddrs, (long) i * SOCKADDR, peer.sockaddr.byteSize());
            sendSockaddrLens[i] = (int) peer.sockaddr.byteSize();
            sendStatus[i] = -1;
            trySend(i);
        }
        if (channel.sleepers()) {
            channel.wake();   // the completion is reported by the IO thread's next poll: wake it if it sleeps
        }
        return 0;
    }

    /**
     * Sends slot {@code i}, once every earlier slot has gone; under this. EAGAIN (the socket's
     * send buffer is full) leaves it for the next poll to try again.
     */
    private void trySend(int i) {
        long n = Sockets.sendto(fd, sendAddrs[i], sendLens[i], sendSockaddrs.address() + (long) i * SOCKADDR,
                sendSockaddrLens[i]);
        if (n == -Errno.EAGAIN) {
            return;
        }
        sendStatus[i] = n >= 0 ? WorkCompletion.SUCCESS : WorkCompletion.LOC_QP_OP_ERR;
    }

    @Override
    public int poll(Sink sink, int max) {
        if (closed) {
            return 0;
        }
        int done = 0;
        synchronized (this) {
            while (done < max && sendCount > 0) {
                int i = sendHead;
                if (sendStatus[i] < 0) {
                    trySend(i);
                    if (sendStatus[i] < 0) {
                        break;
                    }
                }
                doneIds[done] = sendIds[i];
                doneStatus[done++] = sendStatus[i];
                sendHead = (sendHead + 1) % sendDepth;
                sendCount--;
            }
        }
        for (int k = 0; k < done; k++) {
            sink.onSend(doneIds[k], doneStatus[k]);
        }
        int received = 0;
        int[] fds = readFds;
        for (int s : fds) {
            while (done + received < max) {
                long wrId;
                long at;
                int room;
                synchronized (recvLock) {
                    if (recvCount == 0) {
                        watch(0);   // level-triggered: an unread socket would wake the thread for nothing
                        return done + received;
                    }
                    wrId = recvIds[recvHead];
                    at = recvAddrs[recvHead];
                    room = recvLens[recvHead] - HEADER;
                }
                fromLen.set(ValueLayout.JAVA_INT, 0, HEADER);
                long n = Sockets.recvfrom(s, at + HEADER, room, at, fromLen.address());
                if (n < 0) {
                    break;   // EAGAIN: nothing more on this socket (a UDP socket has no other pending error here)
                }
                if (n > room) {
                    continue;   // cut by the kernel: not delivered, and the buffer stays posted
                }
                synchronized (recvLock) {
                    recvHead = (recvHead + 1) % recvDepth;
                    recvCount--;
                }
                received++;
                sink.onReceive(wrId, WorkCompletion.SUCCESS, (int) n, 0);
            }
        }
        return done + received;
    }

    @Override
    public void arm() {
        boolean pending;
        synchronized (this) {
            pending = sendCount > 0;
        }
        if (pending) {
            channel.wake();   // a send waits for a retry or its report: do not sleep past it
        }
    }

    @Override
    public DatagramPeer sourceOf(MemorySegment header, int sourceQp, int maxPeers) {
        InetSocketAddress from = SockAddr.toInet(header);
        if (from == null) {
            return null;
        }
        synchronized (this) {
            if (closed) {
                return null;
            }
            TcpDatagramPeer p = senders.seen(from);
            return p != null ? p : senders.add(from, peer(from, false), maxPeers);
        }
    }

    /** A tcp peer holds nothing that eviction frees: it stays good to send to as it is. */
    @Override
    public synchronized DatagramPeer renew(DatagramPeer stale, int maxPeers) {
        return !closed && stale instanceof TcpDatagramPeer p && p.owner == this ? p : null;
    }

    @Override
    public synchronized int senders() {
        return senders.size();
    }

    @Override
    public synchronized long sendersEvicted() {
        return senders.evicted();
    }

    /** A new peer for {@code address}, its sockaddr on the heap; under this. */
    private TcpDatagramPeer peer(InetSocketAddress address, boolean group) {
        byte[] sockaddr = SockAddr.of(address, sockaddrScratch).toArray(ValueLayout.JAVA_BYTE);
        return new TcpDatagramPeer(this, address, MemorySegment.ofArray(sockaddr), group);
    }

    private synchronized TcpDatagramPeer peerUnlessClosed(InetSocketAddress address, boolean group) {
        return closed ? null : peer(address, group);
    }

    @Override
    public void resolve(InetSocketAddress remote, int timeoutMs, Resolved done) {
        if ((remote.getAddress() instanceof Inet4Address) != (local.getAddress() instanceof Inet4Address)) {
            done.done(null, "an endpoint bound to " + local + " cannot reach " + remote + " (another address family)");
            return;
        }
        if (remote.getAddress().isMulticastAddress()) {
            done.done(null, remote.getAddress() + " is a multicast group: join it instead");
            return;
        }
        TcpDatagramPeer p = peerUnlessClosed(remote, false);
        if (p == null) {
            done.done(null, "the endpoint is closed");
        } else {
            done.done(p, null);
        }
    }

    @Override
    public void join(InetAddress group, Resolved done) {
        if (!(group instanceof Inet4Address) || !(local.getAddress() instanceof Inet4Address)) {
            throw new UnsupportedCapabilityException("IPv6 multicast groups", "tcp",
                    "the tcp and shm providers join IPv4 groups only (" + group + " from " + local + ")");
        }
        NetworkInterface nic;
        try {
            nic = NetworkInterface.getByInetAddress(local.getAddress());
            if (nic == null && local.getAddress().isLoopbackAddress()) {
                // 127.0.0.2 and the rest of 127/8 are lo's, though only 127.0.0.1 is assigned to it
                nic = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
            }
            if (nic == null) {
                done.done(null, "the endpoint is bound to " + local.getAddress()
                        + ", not to an interface's address: bind it to one to join a multicast group");
                return;
            }
            if (!nic.supportsMulticast()) {
                throw new UnsupportedCapabilityException("multicast", "tcp", "interface " + nic.getName() + " of "
                        + local.getAddress() + " has no MULTICAST flag (as Linux's lo has not by default): "
                        + "ip link set " + nic.getName() + " multicast on");
            }
        } catch (SocketException e) {
            done.done(null, "cannot look up the interface of " + local.getAddress() + ": " + e.getMessage());
            return;
        }
        synchronized (this) {
            if (groups.containsKey(group)) {
                done.done(null, "already a member of " + group.getHostAddress());
                return;
            }
        }
        InetSocketAddress at = new InetSocketAddress(group, MULTICAST_PORT);
        int gfd = Sockets.datagramSocketFor(at);
        try (Arena a = Arena.ofConfined()) {
            Sockets.setIntOption(gfd, Sockets.SOL_SOCKET, Sockets.SO_REUSEADDR, 1, "SO_REUSEADDR");
            Sockets.bind(gfd, at);
            // struct ip_mreqn: the group, the local address, the interface index
            MemorySegment mreq = a.allocate(12, 4);
            MemorySegment.copy(group.getAddress(), 0, mreq, ValueLayout.JAVA_BYTE, 0, 4);
            MemorySegment.copy(local.getAddress().getAddress(), 0, mreq, ValueLayout.JAVA_BYTE, 4, 4);
            mreq.set(ValueLayout.JAVA_INT, 8, nic.getIndex());
            Sockets.setOption(gfd, Sockets.IPPROTO_IP, Sockets.IP_ADD_MEMBERSHIP, mreq, "IP_ADD_MEMBERSHIP " + group.getHostAddress());
            Sockets.setOption(fd, Sockets.IPPROTO_IP, Sockets.IP_MULTICAST_IF, mreq, "IP_MULTICAST_IF " + local.getAddress());
            Sockets.setIntOption(fd, Sockets.IPPROTO_IP, Sockets.IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
        } catch (RuntimeException e) {
            Sockets.close(gfd);
            done.done(null, e.getMessage());
            return;
        }
        synchronized (recvLock) {
            channel.watch(gfd, watching, true);
            int[] now = readFds;
            int[] more = java.util.Arrays.copyOf(now, now.length + 1);
            more[now.length] = gfd;
            readFds = more;
        }
        synchronized (this) {
            groups.put(group, gfd);
        }
        TcpDatagramPeer g = peerUnlessClosed(at, true);
        if (g == null) {
            done.done(null, "the endpoint is closed");
        } else {
            done.done(g, null);
        }
    }

    @Override
    public void leave(DatagramPeer group) {
        Integer gfd;
        synchronized (this) {
            gfd = groups.remove(group.address().getAddress());
        }
        if (gfd == null) {
            return;
        }
        synchronized (recvLock) {
            int[] now = readFds;
            readFds = java.util.Arrays.stream(now).filter(s -> s != gfd).toArray();
            channel.unwatch(gfd);
        }
        Sockets.close(gfd);   // closing the socket drops its membership
    }

    @Override
    public void close() {
        synchronized (recvLock) {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
            }
            for (int s : readFds) {
                channel.unwatch(s);
                Sockets.close(s);
            }
            readFds = new int[0];
        }
        synchronized (this) {
            senders.clear();
            groups.clear();
        }
        arena.close();
    }

    /** A socket address this queue pair sends to. */
    static final class TcpDatagramPeer implements DatagramPeer {
        final TcpDatagramQueuePair owner;
        private final InetSocketAddress address;
        /** Its sockaddr, on the heap (a send copies it to its slot's native one). */
        final MemorySegment sockaddr;
        private final boolean group;

        TcpDatagramPeer(TcpDatagramQueuePair owner, InetSocketAddress address, MemorySegment sockaddr, boolean group) {
            this.owner = owner;
            this.address = address;
            this.sockaddr = sockaddr;
            this.group = group;
        }

        @Override
        public InetSocketAddress address() {
            return address;
        }

        @Override
        public int queuePairNumber() {
            return 0;
        }

        @Override
        public boolean group() {
            return group;
        }
    }
}
