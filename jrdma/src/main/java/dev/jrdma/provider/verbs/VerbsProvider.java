package dev.jrdma.provider.verbs;

import dev.jrdma.device.DeviceInfo;
import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.provider.verbs.ffi.NativeLibraries;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Provider;

import java.util.List;

/**
 * The {@code verbs} provider: real RDMA on any rdma-core device (mlx5, efa, irdma, rxe, siw ...).
 * Available when native access is on, libibverbs and librdmacm load, and at least one device
 * is listed.
 */
public final class VerbsProvider implements Provider {
    public static final String NAME = "verbs";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public ProviderUnavailableException unavailabilityCause() {
        ProviderUnavailableException cause = NativeLibraries.unavailabilityCause();
        if (cause != null) {
            return cause;
        }
        try {
            if (VerbsDevices.list().isEmpty()) {
                return new ProviderUnavailableException(NAME, "no RDMA device found by ibv_get_device_list "
                        + "(no NIC with RDMA, or its kernel driver / rdma-core provider is not installed); "
                        + "for Soft-RoCE: rdma link add rxe0 type rxe netdev <ifname>");
            }
            return null;
        } catch (RdmaException e) {
            return new ProviderUnavailableException(NAME, e.getMessage(), e);
        }
    }

    @Override
    public Device open(String deviceName) {
        NativeLibraries.ensureAvailable();
        return VerbsDevice.open(deviceName);
    }

    /** Every device ibv_get_device_list reports, each opened briefly to read it. */
    @Override
    public List<DeviceInfo> devices() {
        NativeLibraries.ensureAvailable();
        return VerbsDevices.describeAll();
    }
}
