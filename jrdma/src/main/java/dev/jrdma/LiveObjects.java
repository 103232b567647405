package dev.jrdma;

import dev.jrdma.engine.io.IoThreads;
import dev.jrdma.engine.region.LeakDetector;
import dev.jrdma.engine.region.LeaseTimer;
import dev.jrdma.memory.MemoryRegistrar;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.SourceAddress;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The registry of what one {@link Rdma} made and has not closed yet (servers, connections,
 * datagram endpoints, shared receive queues, regions), and the order in which {@link #close}
 * closes them with the rest: users of the device first, then its connection manager and IO
 * threads, then the memory they could reach, the device last.
 *
 * <p>Threads: any; the sets are concurrent. {@link #close} runs once, on the thread that closes
 * the {@code Rdma}.
 */
final class LiveObjects {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Set<SharedReceiveQueue> sharedQueues = ConcurrentHashMap.newKeySet();
    private final Set<DatagramEndpoint> datagramEndpoints = ConcurrentHashMap.newKeySet();
    private final Set<RdmaServer> servers = ConcurrentHashMap.newKeySet();
    /** What every open region holds (not the regions: a dropped one can be collected and reported). */
    private final Set<RegionResources> regions = ConcurrentHashMap.newKeySet();
    /** Released connections whose receive buffers wait for lent messages to close; freed at close at the latest. */
    private final Set<Connection> holdingMemory = ConcurrentHashMap.newKeySet();
    /** Connections by QP number, for device events about a QP. */
    private final Map<Integer, Connection> byQpNum = new ConcurrentHashMap<>();
    /** Leak detection (Builder.leakDetection): regions are watched only when it is on. */
    private final boolean leakDetection;
    private final LeakDetector<RegionResources> leaks = new LeakDetector<>(RegionResources::isClosed);
    private volatile boolean closed;

    LiveObjects(boolean leakDetection) {
        this.leakDetection = leakDetection;
    }

    boolean isClosed() {
        return closed;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this Rdma instance is closed");
        }
    }

    // ---------------------------------------------------------------- connections

    void add(Connection c) {
        connections.add(c);
    }

    void forget(Connection c) {
        connections.remove(c);
        byQpNum.values().remove(c);
    }

    void queuePairCreated(int qpNum, Connection c) {
        byQpNum.put(qpNum, c);
    }

    /** {@return the connection of QP {@code qpNum}, or null (another instance's QP on the same device)} */
    Connection byQpNum(int qpNum) {
        return byQpNum.get(qpNum);
    }

    /** {@return the live connections, a view (weakly consistent)} */
    Iterable<Connection> connections() {
        return connections;
    }

    int connectionCount() {
        return connections.size();
    }

    /** Accepted connections not yet established (their handshake under way), for tests: a scan; any thread. */
    int acceptedConnecting() {
        int n = 0;
        for (Connection c : connections) {
            if (c.server != null && c.state() == ConnectionState.CONNECTING) {
                n++;
            }
        }
        return n;
    }

    /** How many connections this instance's servers hold from {@code source} (the control path: a scan). */
    int fromSource(SourceAddress source) {
        int n = 0;
        for (Connection c : connections) {
            InetSocketAddress a = c.remoteAddress();
            if (c.server != null && a != null && source.equals(SourceAddress.of(a.getAddress()))) {
                n++;
            }
        }
        return n;
    }

    void memoryHeld(Connection c) {
        holdingMemory.add(c);
        if (closed) {
            c.freeMemory();
        }
    }

    void memoryFreed(Connection c) {
        holdingMemory.remove(c);
    }

    // ---------------------------------------------------------------- servers, endpoints, queues

    void add(RdmaServer s) {
        servers.add(s);
    }

    void forget(RdmaServer s) {
        servers.remove(s);
    }

    /** {@return the server listening on {@code listener}, or null} */
    RdmaServer serverOf(CmListener listener) {
        RdmaServer server = null;
        for (RdmaServer s : servers) {
            if (s.listener == listener) {
                server = s;
            }
        }
        return server;
    }

    void add(DatagramEndpoint e) {
        datagramEndpoints.add(e);
    }

    void datagramEndpointClosed(DatagramEndpoint e) {
        datagramEndpoints.remove(e);
    }

    void add(SharedReceiveQueue q) {
        sharedQueues.add(q);
    }

    void sharedReceiveQueueClosed(SharedReceiveQueue q) {
        sharedQueues.remove(q);
    }

    boolean isOpen(SharedReceiveQueue q) {
        return sharedQueues.contains(q);
    }

    // ---------------------------------------------------------------- regions

    LocalRegion track(LocalRegion r) {
        regions.add(r.resources());
        if (leakDetection) {
            reportLeaks();
            r.resources().leak = leaks.watch(r, r.resources());
        }
        return r;
    }

    void untrack(RegionResources r) {
        regions.remove(r);
        LeakDetector.Watch<RegionResources> leak = r.leak;
        if (leak != null) {
            leaks.forget(leak);
        }
    }

    /**
     * Logs each region that was garbage-collected without {@link LocalRegion#close()}, with where it
     * was made; its memory stays registered until this {@code Rdma} closes (releasing it earlier
     * could hand it to another region while an operation still targets it). Runs when a region
     * is made and at close; returns the stack of each it reported.
     */
    List<Throwable> reportLeaks() {
        return leaks.report();
    }

    // ---------------------------------------------------------------- close

    /**
     * Closes every server, connection and endpoint, then the connection manager and the IO
     * threads, the lease timer, every region, the receive buffers still lent, the shared receive
     * queues, the pool and the device. Once; later calls do nothing.
     *
     * @throws IllegalStateException when an IO loop is still driven by another thread (nothing is closed then)
     */
    void close(IoThreads io, LeaseTimer leases, MemoryRegistrar memory, Device device) {
        if (closed) {
            return;
        }
        io.checkNotDrivenElsewhere();
        closed = true;
        closeUsers();
        io.closeManager(IoThreads.CONTROL_TIMEOUT);
        io.closeThreads();
        leases.close();
        if (leakDetection) {
            reportLeaks();
        }
        for (RegionResources r : List.copyOf(regions)) {
            r.close();
        }
        for (Connection c : List.copyOf(holdingMemory)) {
            c.freeMemory();   // messages still open: their data is gone with the Rdma
        }
        for (SharedReceiveQueue q : List.copyOf(sharedQueues)) {
            q.closeWithRdma();   // after its connections' QPs are gone, before the device's PD
        }
        memory.close();
        device.close();
    }

    /** The servers, then the connections and datagram endpoints (a failure to close one is logged). */
    private void closeUsers() {
        for (RdmaServer s : List.copyOf(servers)) {
            s.close();
        }
        for (Connection c : List.copyOf(connections)) {
            try {
                c.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing " + c, e);
            }
        }
        for (DatagramEndpoint e : List.copyOf(datagramEndpoints)) {
            try {
                e.close();
            } catch (RuntimeException x) {
                LOG.log(System.Logger.Level.WARNING, "closing " + e, x);
            }
        }
    }
}
