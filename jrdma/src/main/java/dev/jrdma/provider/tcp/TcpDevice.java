package dev.jrdma.provider.tcp;

import dev.jrdma.spi.ShareableMemory;
import dev.jrdma.spi.Srq;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.CompletionQueue;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.device.DeviceCapabilities;
import dev.jrdma.spi.DeviceEventHandler;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.QueuePair;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tcp provider's one device, {@value #NAME}: a table of registrations that peers name by
 * key, and the factories of the tcp completion queues and connections. Its limits are
 * software's: large queues, any region size, 8-byte atomics; no masked atomics (the API
 * emulates them), no SRQ, no ODP.
 */
final class TcpDevice implements Device {
    static final String NAME = "tcp";
    private final String name;
    /** Direct same-host access (the shm provider), or null: tcp only. */
    final TcpSameHost sameHost;

    TcpDevice(String name, TcpSameHost sameHost) {
        PayloadBudget.process();   // a bad -Djrdma.tcp.* setting is refused here, by name, not at the first connection
        this.name = name;
        this.sameHost = sameHost;
    }
    private static final DeviceCapabilities CAPS = new DeviceCapabilities(32768, 1, 1 << 20, 128, 128,
            Long.MAX_VALUE, true, false, true, false);
    private final TcpRegistrations registrations = new TcpRegistrations();
    private final AtomicInteger qpNums = new AtomicInteger(0x100);
    private final byte[] bootId = readBootId();

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean flushes() {
        return true;
    }

    @Override
    public ShareableMemory allocateShareable(long size) {
        return sameHost == null ? null : sameHost.allocate(size);
    }

    @Override
    public DeviceCapabilities capabilities() {
        return CAPS;
    }

    TcpRegistrations registrations() {
        return registrations;
    }

    int nextQpNum() {
        return qpNums.getAndIncrement() & 0xFFFFFF;
    }

    /** This boot of this host: two peers with the same boot id share a kernel (and can share memory). */
    byte[] bootId() {
        return bootId;
    }

    /** This boot's id, as the handshake carries it (zeros when unknown). */
    static byte[] readBootId() {
        try {
            UUID u = UUID.fromString(Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim());
            return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits())
                    .array();
        } catch (IOException | IllegalArgumentException e) {
            return new byte[16];   // unknown: never equal to a real one
        }
    }

    @Override
    public MemoryRegistration register(MemorySegment memory, int access) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("tcp: only native memory can be registered (this segment is on the heap)");
        }
        return registrations.register(memory, access);
    }

    @Override
    public MemoryRegistration registerFor(QueuePair qp, MemorySegment memory, int access) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("tcp: only native memory can be registered (this segment is on the heap)");
        }
        if (!(qp instanceof TcpQueuePair tqp) || tqp.registrations != registrations) {
            throw new IllegalArgumentException("tcp: " + qp + " is not a queue pair of this device");
        }
        return registrations.register(memory, access, tqp.scope);
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        return new TcpCompletionChannel();
    }

    @Override
    public CompletionQueue createCompletionQueue(int depth, CompletionChannel channel) {
        return new TcpCompletionQueue(depth, (TcpCompletionChannel) channel);
    }

    @Override
    public Srq createSrq(int capacity, Runnable onLimit) {
        return new TcpSharedReceiveQueue(registrations, capacity, onLimit);
    }

    @Override
    public ConnectionManager createConnectionManager() {
        return new TcpConnectionManager(this, ConnectionLimits.DEFAULTS);
    }

    @Override
    public ConnectionManager createConnectionManager(ConnectionLimits limits) {
        return new TcpConnectionManager(this, limits);
    }

    @Override
    public int eventFd() {
        return -1;
    }

    @Override
    public void onEvents(DeviceEventHandler handler) {
        // A software device has no asynchronous events: connections report their own failures.
    }

    @Override
    public int pollEvents() {
        return 0;
    }

    @Override
    public void close() {
        // Registrations are closed by their owners; shared memory nobody uses any more goes now.
        if (sameHost != null) {
            sameHost.close();
        }
    }
}
