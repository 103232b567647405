package dev.jrdma.provider.shm;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.provider.tcp.TcpProvider;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Provider;

/**
 * The {@code shm} provider: the tcp provider's connections (handshake, messages, completions),
 * plus direct access between peers of one host and user, proven by the kernel
 * ({@link ShmRendezvous}): their frames go through shared rings ({@link SharedByteRing},
 * exchanged by {@link ShmLink}), and memory that {@code Rdma.allocate} hands out lives in sealed
 * memfds ({@link ShmMemory}) that such a peer maps on first use, so that writes, reads and
 * atomics on it are plain copies and CPU atomics on the mapping, with no CPU of the target.
 * Peers on other hosts or of other users, and memory the user registered that is not
 * shareable, keep the tcp path, transparently.
 */
public final class ShmProvider implements Provider {
    public static final String NAME = "shm";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public ProviderUnavailableException unavailabilityCause() {
        ProviderUnavailableException tcp = new TcpProvider().unavailabilityCause();
        if (tcp != null) {
            return new ProviderUnavailableException(NAME, "it rides on tcp, which cannot run here: " + tcp.getMessage());
        }
        return ShmMemory.unavailabilityCause();
    }

    @Override
    public Device open(String deviceName) {
        ProviderUnavailableException why = unavailabilityCause();
        if (why != null) {
            throw why;
        }
        if (deviceName != null && !deviceName.equals(NAME)) {
            throw new RdmaException("the shm provider has one device, \"shm\", not \"" + deviceName + "\"");
        }
        return TcpProvider.openSameHost(NAME, new ShmMemory());
    }
}
