package dev.jrdma.exceptions;

/**
 * A provider cannot be used on this machine: its native library is missing, it has no device,
 * or the JVM was started without native access. The message names the cause and what to do.
 */
public class ProviderUnavailableException extends RdmaException {
    private static final long serialVersionUID = 1L;

    private final String provider;

    public ProviderUnavailableException(String provider, String cause) {
        super("provider '" + provider + "' is unavailable: " + cause);
        this.provider = provider;
    }

    public ProviderUnavailableException(String provider, String cause, Throwable throwable) {
        super("provider '" + provider + "' is unavailable: " + cause, throwable);
        this.provider = provider;
    }

    /** The provider name, e.g. {@code verbs}. */
    public String provider() {
        return provider;
    }
}
