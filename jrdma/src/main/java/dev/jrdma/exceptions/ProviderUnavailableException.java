package dev.jrdma.exceptions;

/**
 * A provider cannot be used on this machine: its native library is missing, it has no device,
 * or the JVM was started without native access. The message names the cause and what to do.
 */
public class ProviderUnavailableException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The provider's name. */
    private final String provider;

    /**
     * {@code provider} cannot run here because of {@code cause}, which also says what to do.
     *
     * @param provider the provider's name, for example {@code verbs}
     * @param cause what caused it
     */
    public ProviderUnavailableException(String provider, String cause) {
        super("provider '" + provider + "' is unavailable: " + cause);
        this.provider = provider;
    }

    /**
     * {@code provider} cannot run here because of {@code cause}; {@code throwable} is what showed it.
     *
     * @param provider the provider's name, for example {@code verbs}
     * @param cause what caused it
     * @param throwable the failure that showed it
     */
    public ProviderUnavailableException(String provider, String cause, Throwable throwable) {
        super("provider '" + provider + "' is unavailable: " + cause, throwable);
        this.provider = provider;
    }

    /** {@return the provider name, e.g} {@code verbs}. */
    public String provider() {
        return provider;
    }
}
