package dev.jrdma.spi;

import dev.jrdma.device.DeviceInfo;
import dev.jrdma.exceptions.ProviderUnavailableException;

import java.util.List;

/**
 * A transport under the jrdma API: {@code verbs} (real RDMA), {@code tcp} and {@code shm}. Found with {@link java.util.ServiceLoader}. Like Netty's {@code Epoll}, a
 * provider answers whether it can run here by actually trying, and keeps the reason if not.
 */
public interface Provider {
    /** The name used in {@code Rdma.builder().provider(name)}, e.g. {@code verbs}. */
    String name();

    /** True when this provider can be used on this machine now. */
    default boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /** Null when available; otherwise what is missing and how to get it. */
    ProviderUnavailableException unavailabilityCause();

    /**
     * Opens a device: {@code deviceName} null for the first device with an active port.
     *
     * @throws ProviderUnavailableException when the provider cannot run here
     * @throws dev.jrdma.exceptions.RdmaException naming the device when it is absent or has no active port
     */
    Device open(String deviceName);

    /**
     * The hardware devices this provider drives, as {@code jrdma devices} lists them: verbs lists
     * its RDMA devices; the software providers have none (they need no device).
     *
     * @throws ProviderUnavailableException when the provider cannot look (verbs: libibverbs or
     *                                      librdmacm do not load, or native access is off)
     */
    default List<DeviceInfo> devices() {
        return List.of();
    }
}
