/**
 * jrdma: RDMA for Java 25 through the Foreign Function and Memory API.
 *
 * <p>Layers, bottom up: {@code dev.jrdma.exceptions} (the typed exception hierarchy every layer
 * throws), {@code dev.jrdma.os} (libc: errno, sockets, epoll, eventfd, mmap), then
 * {@code dev.jrdma.provider.verbs.ffi} (bindings to libibverbs and librdmacm) and
 * {@code dev.jrdma.spi} (the provider interface), the providers, {@code dev.jrdma.memory} and
 * {@code dev.jrdma.runtime}, the public API, and {@code dev.jrdma.collective} (peer groups and
 * collectives, on the public API only). {@code LayeringTest} holds every package to this.
 */
module dev.jrdma {
    exports dev.jrdma;
    exports dev.jrdma.exceptions;
    exports dev.jrdma.collective;
    exports dev.jrdma.runtime;
    exports dev.jrdma.spi;
    exports dev.jrdma.provider.verbs;
    exports dev.jrdma.provider.verbs.ffi;

    uses dev.jrdma.spi.Provider;
    provides dev.jrdma.spi.Provider with dev.jrdma.provider.verbs.VerbsProvider;
}
