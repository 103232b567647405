package dev.jrdma.engine.select;

import dev.jrdma.exceptions.ProviderUnavailableException;
import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.Provider;
import dev.jrdma.spi.Providers;

import java.util.ArrayList;
import java.util.List;

/**
 * A provider and the device opened on it, with why it was chosen ("tcp, as asked", or for auto
 * what was found: "auto: tcp, because verbs …").
 *
 * @param provider the provider
 * @param device   the device, open: the caller closes it
 * @param reason   why this provider
 */
public record ProviderSelection(Provider provider, Device device, String reason) {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    /**
     * The provider asked for, opened; for {@code auto}: verbs when it has a device that opens,
     * else shm or tcp, saying why verbs was passed over in the reason (and the log, at DEBUG).
     *
     * @param name   {@code auto}, {@code verbs}, {@code shm} or {@code tcp}
     * @param given  a provider to use itself instead of one found by name (tests: a fake), or null
     * @param device the device's name, or null for the first with an active port
     * @return the provider and its open device
     * @throws ProviderUnavailableException when the provider cannot run here (the cause), or there is none of that name
     */
    public static ProviderSelection open(String name, Provider given, String device) {
        if (given != null) {
            return new ProviderSelection(given, given.open(device), name + ", given");
        }
        List<Provider> all = Providers.all();
        if (name.equals("auto")) {
            return auto(all, device);
        }
        List<String> names = new ArrayList<>();
        for (Provider p : all) {
            names.add(p.name());
            if (p.name().equals(name)) {
                ProviderUnavailableException cause = p.unavailabilityCause();
                if (cause != null) {
                    throw cause;
                }
                return new ProviderSelection(p, p.open(device), name + ", as asked");
            }
        }
        throw new ProviderUnavailableException(name, "no such provider; providers here: " + names);
    }

    private static ProviderSelection auto(List<Provider> all, String device) {
        String whyNotVerbs = "it is not in this build";
        for (Provider p : all) {
            if (p.name().equals("verbs")) {
                ProviderUnavailableException cause = p.unavailabilityCause();
                if (cause == null) {
                    try {
                        return new ProviderSelection(p, p.open(device), "auto: verbs, device up");
                    } catch (RdmaException e) {
                        whyNotVerbs = e.getMessage();
                    }
                } else {
                    whyNotVerbs = cause.getMessage();
                }
            }
        }
        // shm is tcp plus direct access to peers of this host, so it serves every peer.
        for (String software : List.of("shm", "tcp")) {
            for (Provider p : all) {
                if (p.name().equals(software) && p.isAvailable()) {
                    String reason = "auto: " + software + (software.equals("shm")
                            ? " (direct shared memory to peers on this host, tcp to the others)" : "")
                            + ", because verbs cannot be used here: " + whyNotVerbs;
                    LOG.log(System.Logger.Level.DEBUG, "jrdma chose the {0}", reason);
                    return new ProviderSelection(p, p.open(null), reason);
                }
            }
        }
        throw new ProviderUnavailableException("auto", "no provider can run here; verbs: " + whyNotVerbs);
    }
}
