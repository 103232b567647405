package dev.jrdma;

/**
 * One provider of this build and whether it can run on this machine now, as
 * {@link Rdma#providers()} reports it: {@code verbs} needs libibverbs, librdmacm and a device;
 * {@code tcp} and {@code shm} need nothing.
 *
 * @param name               the name to give {@link Rdma.Builder#provider(String)}
 * @param unavailableBecause null when the provider can run here; otherwise what is missing and how to get it
 */
public record ProviderStatus(String name, String unavailableBecause) {
    /** {@return whether the provider can run here now} */
    public boolean available() {
        return unavailableBecause == null;
    }

    @Override
    public String toString() {
        return name + ": " + (available() ? "available" : "unavailable (" + unavailableBecause + ")");
    }
}
