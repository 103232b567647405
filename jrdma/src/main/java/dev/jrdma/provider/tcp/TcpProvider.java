package dev.jrdma.provider.tcp;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.os.NativeCalls;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Provider;

/**
 * The {@code tcp} provider: RDMA semantics over TCP for machines with no RDMA device, and
 * across hosts. One device, {@code tcp}. Needs Linux (epoll, eventfd) and native access, as
 * it drives its sockets through FFM.
 */
public final class TcpProvider implements Provider {
    public static final String NAME = "tcp";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public ProviderUnavailableException unavailabilityCause() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return new ProviderUnavailableException(NAME, "it needs Linux (epoll, eventfd); this is "
                    + System.getProperty("os.name"));
        }
        if (!NativeCalls.isNativeAccessEnabled()) {
            return new ProviderUnavailableException(NAME, "native access is off: run java with "
                    + NativeCalls.nativeAccessFlag());
        }
        return null;
    }

    @Override
    public Device open(String deviceName) {
        ProviderUnavailableException why = unavailabilityCause();
        if (why != null) {
            throw why;
        }
        if (deviceName != null && !deviceName.equals(TcpDevice.NAME)) {
            throw new RdmaException("the tcp provider has one device, \"" + TcpDevice.NAME + "\", not \"" + deviceName
                    + "\"");
        }
        return new TcpDevice(TcpDevice.NAME, null);
    }

    /**
     * A tcp device named {@code name} whose connections to peers of this host reach shareable
     * regions directly through {@code sameHost}: how the shm provider rides on tcp.
     */
    public static Device openSameHost(String name, TcpSameHost sameHost) {
        ProviderUnavailableException why = new TcpProvider().unavailabilityCause();
        if (why != null) {
            throw why;
        }
        return new TcpDevice(name, sameHost);
    }
}
